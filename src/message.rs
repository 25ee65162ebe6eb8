//! Error messages built from parts, with numbers printed by a formatter the
//! caller chooses: inside WebAssembly the JS engine's own (so the download
//! carries no float formatter), natively an exact Rust copy of it.

/// Prints numbers the way JavaScript does.
pub trait NumberFormat {
    /// `String(x)`.
    fn number(&self, x: f64) -> String;
    /// `x.toFixed(2)` (the reference prints its reservation bound so).
    fn fixed_2(&self, x: f64) -> String;
}

/// JavaScript's number printing, written in Rust: what `Display` uses.
pub struct RustNumbers;

impl NumberFormat for RustNumbers {
    fn number(&self, x: f64) -> String {
        js_number(x)
    }

    fn fixed_2(&self, x: f64) -> String {
        if !x.is_finite() || x.abs() >= 1e21 {
            return js_number(x);
        }
        // Both round the exact binary value; on an exact tie, which only a
        // multiple of 1/8 can hit, JavaScript picks the larger neighbour and
        // Rust the even one.
        let is_exact_tie = (x * 8.0).fract() == 0.0 && (x * 100.0).fract().abs() == 0.5;
        if is_exact_tie {
            return format!("{:.2}", (x * 100.0 + 0.5).floor() / 100.0);
        }
        format!("{x:.2}")
    }
}

/// Formats `x` as JavaScript's `String(x)` does.
///
/// Rust's `Display` for `f64` already prints the shortest string that reads
/// back to the same number; JavaScript differs only in switching to exponent
/// notation below `1e-6` and from `1e21`, and in its names for the
/// non-finite values.
///
/// ```
/// use ratebound::js_number;
/// assert_eq!(js_number(2.0), "2");
/// assert_eq!(js_number(0.1 + 0.2), "0.30000000000000004");
/// assert_eq!(js_number(1e21), "1e+21");
/// assert_eq!(js_number(1.5e-7), "1.5e-7");
/// assert_eq!(js_number(f64::NEG_INFINITY), "-Infinity");
/// assert_eq!(js_number(-0.0), "0");
/// ```
pub fn js_number(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if x == 0.0 {
        return "0".into();
    }
    if (1e-6..1e21).contains(&x.abs()) {
        return format!("{x}");
    }
    let exponent_form = format!("{x:e}");
    match exponent_form.split_once('e') {
        Some((mantissa, exponent)) if !exponent.starts_with('-') => format!("{mantissa}e+{exponent}"),
        _ => exponent_form,
    }
}

/// A message under construction.
pub struct Message<'a> {
    text: String,
    numbers: &'a dyn NumberFormat,
}

impl<'a> Message<'a> {
    /// An empty message whose numbers `numbers` prints.
    pub fn new(numbers: &'a dyn NumberFormat) -> Self {
        Message { text: String::new(), numbers }
    }

    /// Appends text as it is.
    pub fn text(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// Appends a number as JavaScript prints it.
    pub fn number(&mut self, x: f64) -> &mut Self {
        let printed = self.numbers.number(x);
        self.text(&printed)
    }

    /// Appends a number as JavaScript's `toFixed(2)` prints it.
    pub fn fixed_2(&mut self, x: f64) -> &mut Self {
        let printed = self.numbers.fixed_2(x);
        self.text(&printed)
    }

    /// Appends a caller's string quoted, and cut after 64 characters so that
    /// a huge name never makes a huge message.
    pub fn shown(&mut self, text: &str) -> &mut Self {
        let length = text.chars().count();
        if length <= 64 {
            return self.quoted(text);
        }
        let head: String = text.chars().take(64).collect();
        self.quoted(&head).text("… (").number(length as f64).text(" characters)")
    }

    /// Appends a string as a JSON string literal, so that empty names and
    /// odd characters stay visible.
    pub fn quoted(&mut self, text: &str) -> &mut Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.text.push('"');
        for c in text.chars() {
            match c {
                '"' => self.text.push_str("\\\""),
                '\\' => self.text.push_str("\\\\"),
                '\n' => self.text.push_str("\\n"),
                '\r' => self.text.push_str("\\r"),
                '\t' => self.text.push_str("\\t"),
                c if (c as u32) < 0x20 => {
                    self.text.push_str("\\u00");
                    self.text.push(HEX[(c as usize) >> 4] as char);
                    self.text.push(HEX[(c as usize) & 15] as char);
                }
                c => self.text.push(c),
            }
        }
        self.text.push('"');
        self
    }

    /// The finished text.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_integers_without_a_fraction() {
        assert_eq!(js_number(3.0), "3");
        assert_eq!(js_number(-40000.0), "-40000");
        assert_eq!(js_number(1e20), "100000000000000000000");
    }

    #[test]
    fn switches_to_exponent_form_where_javascript_does() {
        assert_eq!(js_number(1e-6), "0.000001");
        assert_eq!(js_number(1e-7), "1e-7");
        assert_eq!(js_number(1.7976931348623157e308), "1.7976931348623157e+308");
        assert_eq!(js_number(5e-324), "5e-324");
    }

    #[test]
    fn to_fixed_rounds_ties_away_from_zero_like_javascript() {
        for (x, printed) in [(0.125, "0.13"), (2.5, "2.50"), (1.0 / 3.0, "0.33"), (4.0, "4.00")] {
            assert_eq!(RustNumbers.fixed_2(x), printed);
        }
    }

    #[test]
    fn quoting_keeps_empty_and_control_characters_visible() {
        let mut message = Message::new(&RustNumbers);
        assert_eq!(message.quoted("").finish(), "\"\"");
        assert_eq!(message.quoted("a\"b\n\u{1}").finish(), "\"a\\\"b\\n\\u0001\"");
    }

    #[test]
    fn a_long_string_is_cut_and_its_length_said() {
        let long = "x".repeat(70);
        let shown = Message::new(&RustNumbers).shown(&long).finish();
        assert_eq!(shown, format!("\"{}\"… (70 characters)", "x".repeat(64)));
    }
}
