// Preloaded into a benchmark's child process (`node --import ./wasm-probe.mjs child.mjs`) before
// the package loads: it sees every WebAssembly instance the process makes, however the package
// makes it (`new WebAssembly.Instance`, `instantiate` from bytes or from a module,
// `instantiateStreaming`), without knowing the package's glue.
//
// It always records the instances (their memories, for heap figures). With
// RATEBOUND_WASM_PROBE=count it also counts crossings of the boundary: every call of an exported
// function (JavaScript into wasm) and every call of an imported function (wasm out to
// JavaScript), by name. Counting wraps each function in a JavaScript one, so a counting process
// is for counting, never for timing.
//
// The counts are on `globalThis.__rateboundWasmProbe`: `into` and `out` (Map name → calls),
// `instances`, `reset()`.

const counting = process.env.RATEBOUND_WASM_PROBE === "count";
const RealInstance = WebAssembly.Instance;
const realInstantiate = WebAssembly.instantiate;
const realInstantiateStreaming = WebAssembly.instantiateStreaming;

const probe = {
  counting,
  /** Every real instance made, in order. */
  instances: [],
  /** Calls from JavaScript into wasm, by export name. */
  into: new Map(),
  /** Calls from wasm out to JavaScript, by "module.name" of the import. */
  out: new Map(),
  reset() {
    probe.into.clear();
    probe.out.clear();
  },
  /** The bytes of every instance's exported memories, summed. */
  memoryBytes() {
    let bytes = 0;
    for (const instance of probe.instances) {
      for (const value of Object.values(instance.exports)) if (value instanceof WebAssembly.Memory) bytes += value.buffer.byteLength;
    }
    return bytes;
  },
};
globalThis.__rateboundWasmProbe = probe;

const bump = (map, name) => map.set(name, (map.get(name) ?? 0) + 1);

function countedImports(imports) {
  if (!counting || imports === undefined || imports === null) return imports;
  const wrapped = {};
  for (const [moduleName, fields] of Object.entries(imports)) {
    wrapped[moduleName] = {};
    for (const [name, value] of Object.entries(fields)) {
      const label = `${moduleName}.${name}`;
      wrapped[moduleName][name] =
        typeof value === "function"
          ? function (...args) {
              bump(probe.out, label);
              return value.apply(this, args);
            }
          : value;
    }
  }
  return wrapped;
}

/** The instance the package gets: the real one, or (counting) one whose exported functions count. */
function seen(instance) {
  probe.instances.push(instance);
  if (!counting) return instance;
  const exports = {};
  for (const [name, value] of Object.entries(instance.exports)) {
    exports[name] =
      typeof value === "function"
        ? function (...args) {
            bump(probe.into, name);
            return value.apply(this, args);
          }
        : value;
  }
  // Still an Instance to `instanceof`, with the counting exports as its own.
  return Object.create(RealInstance.prototype, { exports: { value: Object.freeze(exports), enumerable: true } });
}

function Instance(module, imports) {
  if (new.target === undefined) throw new TypeError("WebAssembly.Instance must be called with new");
  return seen(new RealInstance(module, countedImports(imports)));
}
Instance.prototype = RealInstance.prototype;
WebAssembly.Instance = Instance;

WebAssembly.instantiate = async function instantiate(source, imports) {
  const result = await realInstantiate.call(WebAssembly, source, countedImports(imports));
  return result instanceof RealInstance ? seen(result) : { module: result.module, instance: seen(result.instance) };
};

if (typeof realInstantiateStreaming === "function") {
  WebAssembly.instantiateStreaming = async function instantiateStreaming(source, imports) {
    const result = await realInstantiateStreaming.call(WebAssembly, source, countedImports(imports));
    return { module: result.module, instance: seen(result.instance) };
  };
}
