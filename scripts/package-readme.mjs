// The package's README is the project's: the build copies the root README.md into pkg/, with
// every relative link made absolute, because npm shows the README without the repository
// around it (a relative `docs/redis.md` is a dead link on the package page).
//
// Links to files go to the repository's file view (`…/blob/main/docs/redis.md#cluster`),
// images to their raw bytes (`…/raw/main/docs/playground.png`, which GitHub serves as the
// image). Links inside code (fenced blocks and inline code spans) are code, and stay as written;
// a link whose text is a code span is a link.
// The repository is read from the manifest's `repository.url`, so the package page and the
// links can never disagree about where the project lives.

/** The repository's web address from a manifest's `repository` (`git+https://host/o/r.git` → `https://host/o/r`). */
export function repositoryWebUrl(repository) {
  const url = typeof repository === "string" ? repository : repository?.url;
  if (typeof url !== "string") throw new Error("package-readme: the manifest has no repository.url");
  const web = url.replace(/^git\+/, "").replace(/\.git$/, "").replace(/\/+$/, "");
  if (!/^https:\/\/[^/]+\/[^/]+\/[^/]+$/.test(web)) throw new Error(`package-readme: repository.url is not an https URL of a repository (got ${url})`);
  return web;
}

/** Whether a link target is relative to the README's folder (not a URL, an anchor, or a site-absolute path). */
export function isRelativeTarget(target) {
  return target !== "" && !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith("#") && !target.startsWith("//") && !target.startsWith("/");
}

const IMAGE = /\.(png|jpe?g|gif|svg|webp|avif)(?:[?#].*)?$/i;

/** A relative target made absolute against the repository at `ref`; `image` picks the raw file over the file view. */
function absolute(web, ref, target, image) {
  const path = new URL(target, "https://x.invalid/").pathname.slice(1) + target.replace(/^[^?#]*/, "");
  return `${web}/${image || IMAGE.test(target) ? "raw" : "blob"}/${ref}/${path}`;
}

/**
 * Maps each line of `markdown` that is prose (not inside a fenced code block) through `prose`.
 *
 * @param {string} markdown
 * @param {(line: string) => string} prose
 * @returns {string}
 */
function mapProse(markdown, prose) {
  let fence = null; // the opening fence while inside a fenced block
  return markdown
    .split("\n")
    .map((line) => {
      const marker = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
      if (fence !== null) {
        if (marker && marker[1][0] === fence[0] && marker[1].length >= fence.length && marker[2].trim() === "") fence = null;
        return line;
      }
      if (marker) {
        fence = marker[1];
        return line;
      }
      return prose(line);
    })
    .join("\n");
}

/**
 * Maps a prose line through `text` with its inline code spans held aside: a span reaches `text` as
 * a placeholder (so a link inside code is not a link, while a link whose text is code, like
 * [`ratebound/redis`](docs/redis.md), still is) and is put back as written.
 */
const outsideCode = (line, text) => {
  const spans = [];
  const masked = line.replace(/`+[^`]*`+/g, (span) => `\u0000${spans.push(span) - 1}\u0000`);
  return text(masked).replace(/\u0000(\d+)\u0000/g, (_all, index) => spans[Number(index)]);
};

const INLINE = /(!?)\[((?:[^\]\\]|\\.)*)\]\(\s*(<[^>]*>|[^)\s]+)((?:\s+"[^"]*")?\s*)\)/g;
const HTML = /\b(href|src)=(["'])([^"']*)\2/g;
const DEFINITION = /^( {0,3}\[[^\]]+\]:\s*)(<[^>]*>|\S+)(.*)$/;
const unbracket = (target) => (target.startsWith("<") ? target.slice(1, -1) : target);

/** Maps every link or image target of `markdown` outside code through `fix(target, image)`. */
function mapTargets(markdown, fix) {
  return mapProse(markdown, (line) => {
    const definition = DEFINITION.exec(line);
    if (definition) return definition[1] + fix(unbracket(definition[2]), false) + definition[3];
    return outsideCode(line, (part) =>
      part
        .replace(INLINE, (_all, bang, text, target, title) => `${bang}[${text}](${fix(unbracket(target), bang === "!")}${title})`)
        .replace(HTML, (_all, attribute, quote, target) => `${attribute}=${quote}${fix(target, attribute === "src")}${quote}`),
    );
  });
}

/**
 * Markdown with every relative link and image target made absolute.
 *
 * @param {string} markdown The README as written for the repository.
 * @param {{ repository: unknown, ref?: string }} options The manifest's `repository`; the branch or tag (default `main`).
 * @returns {string} The README for the package.
 * @example
 * npmReadme("[Redis](docs/redis.md#cluster)", { repository: { url: "git+https://github.com/ratebound/ratebound.git" } });
 * // "[Redis](https://github.com/ratebound/ratebound/blob/main/docs/redis.md#cluster)"
 */
export function npmReadme(markdown, { repository, ref = "main" }) {
  const web = repositoryWebUrl(repository);
  return mapTargets(markdown, (target, image) => (isRelativeTarget(target) ? absolute(web, ref, target, image) : target));
}

/**
 * Every relative link or image target left in `markdown` outside code (what the package's test
 * asserts is empty).
 *
 * @param {string} markdown
 * @returns {string[]}
 */
export function relativeTargets(markdown) {
  const found = [];
  mapTargets(markdown, (target) => {
    if (isRelativeTarget(target)) found.push(target);
    return target;
  });
  return found;
}
