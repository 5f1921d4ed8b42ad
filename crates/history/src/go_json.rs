//! A JSON encoder that reproduces Go's `encoding/json` output for generic values
//! (`map[string]interface{}` trees), byte for byte.
//!
//! Upstream compares ControllerRevisions by their data bytes and names them by a hash of those
//! bytes, so our bytes must be Go's: compact, keys sorted byte-wise at every level (regardless of
//! the input's key order: the workspace enables serde_json's `preserve_order`), HTML-safe string
//! escaping (`<`, `>`, `&`, U+2028, U+2029) and float64 number formatting.

use serde_json::{Map, Number, Value};

use crate::Error;

/// Encodes `value` exactly as Go's `json.Marshal` encodes the same tree after `json.Unmarshal`
/// into `interface{}` (where every number is a float64).
pub fn encode(value: &Value) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(256);
    write_value(&mut out, value)?;
    Ok(out)
}

/// Returns a copy of `value` whose object keys are inserted in byte-wise sorted order at every
/// level, so that even a plain serde_json serialization of it lists keys in Go's order.
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            let sorted_map: Map<String, Value> = entries
                .into_iter()
                .map(|(key, value)| (key.clone(), sorted(value)))
                .collect();
            Value::Object(sorted_map)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn write_value(out: &mut Vec<u8>, value: &Value) -> Result<(), Error> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => write_number(out, number)?,
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_value(out, item)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_string(out, key);
                out.push(b':');
                write_value(out, item)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// Go decodes every JSON number into a float64 and `encoding/json` prints it with
/// `strconv.FormatFloat(f, 'f', -1, 64)`, switching to the `'e'` form (with a cleaned-up
/// exponent) below 1e-6 and from 1e21.
fn write_number(out: &mut Vec<u8>, number: &Number) -> Result<(), Error> {
    let float = number
        .as_f64()
        .filter(|float| float.is_finite())
        .ok_or_else(|| Error::UnrepresentableNumber(number.to_string()))?;
    out.extend_from_slice(format_go_float64(float).as_bytes());
    Ok(())
}

fn format_go_float64(float: f64) -> String {
    let magnitude = float.abs();
    if magnitude != 0.0 && !(1e-6..1e21).contains(&magnitude) {
        // Rust prints the shortest round-trip mantissa like Go; only the exponent differs:
        // Go writes an explicit `+` and (after its clean-up) no leading zero.
        let rust_form = format!("{float:e}");
        match rust_form.split_once('e') {
            Some((mantissa, exponent)) if !exponent.starts_with('-') => {
                format!("{mantissa}e+{exponent}")
            }
            _ => rust_form,
        }
    } else {
        // Shortest round-trip digits without exponent, "-0" for negative zero: Go's 'f', -1.
        format!("{float}")
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Go's `encodeState.string` with `escapeHTML` on (the default of `json.Marshal`, Go >= 1.22).
fn write_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    for character in text.chars() {
        match character {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '<' | '>' | '&' | '\u{0}'..='\u{1f}' => {
                let code = character as u32;
                out.extend_from_slice(b"\\u00");
                out.push(HEX[((code >> 4) & 0xf) as usize]);
                out.push(HEX[(code & 0xf) as usize]);
            }
            '\u{2028}' => out.extend_from_slice(b"\\u2028"),
            '\u{2029}' => out.extend_from_slice(b"\\u2029"),
            other => {
                let mut buffer = [0u8; 4];
                out.extend_from_slice(other.encode_utf8(&mut buffer).as_bytes());
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode_str(json: &str) -> String {
        let value: Value = serde_json::from_str(json).expect("test input is valid JSON");
        String::from_utf8(encode(&value).expect("encodable")).expect("utf-8 output")
    }

    #[test]
    fn matches_go_encoding() {
        let cases = [
            (
                "compact, no whitespace",
                r#"[ 1 , true , false , null ]"#,
                "[1,true,false,null]",
            ),
            (
                "keys sorted at every level",
                r#"{"b":{"z":1,"a":2},"a":[{"y":1,"x":2}]}"#,
                r#"{"a":[{"x":2,"y":1}],"b":{"a":2,"z":1}}"#,
            ),
            (
                "$patch sorts before letters",
                r#"{"spec":1,"$patch":"replace","Z":0}"#,
                r#"{"$patch":"replace","Z":0,"spec":1}"#,
            ),
            (
                "byte-wise key order, uppercase first",
                r#"{"a":1,"B":2,"_":3,"é":4}"#,
                r#"{"B":2,"_":3,"a":1,"é":4}"#,
            ),
            (
                "empty containers",
                r#"{"a":{},"b":[]}"#,
                r#"{"a":{},"b":[]}"#,
            ),
            ("html escaping", r#""a<b>&c""#, r#""a\u003cb\u003e\u0026c""#),
            (
                "line and paragraph separators",
                "\"x\u{2028}y\u{2029}z\"",
                r#""x\u2028y\u2029z""#,
            ),
            ("quote and backslash", r#""q\"b\\""#, r#""q\"b\\""#),
            ("short escapes", r#""\n\r\t\b\f""#, r#""\n\r\t\b\f""#),
            (
                "other control characters lowercase hex",
                r#""\u0001\u001f\u000b""#,
                r#""\u0001\u001f\u000b""#,
            ),
            (
                "slash, DEL and non-ASCII stay raw",
                "\"/\u{7f}ü😀\"",
                "\"/\u{7f}ü😀\"",
            ),
            (
                "escaped input is decoded then re-encoded",
                r#""\u00e9\/""#,
                "\"é/\"",
            ),
            ("integers", "[0,30,-1,1000000]", "[0,30,-1,1000000]"),
            (
                "integral floats print as integers",
                "[1.0,30.000,-2.0e0]",
                "[1,30,-2]",
            ),
            (
                "fractions",
                "[0.5,1.25,-0.001,0.000001]",
                "[0.5,1.25,-0.001,0.000001]",
            ),
            (
                "below 1e-6 uses exponent",
                "[1e-7,0.00000012,-5e-10]",
                "[1e-7,1.2e-7,-5e-10]",
            ),
            (
                "from 1e21 uses exponent",
                "[1e21,123e20,-1.5e300]",
                "[1e+21,1.23e+22,-1.5e+300]",
            ),
            (
                "just below 1e21 is plain",
                "[1e20,999999999999999900000]",
                "[100000000000000000000,999999999999999900000]",
            ),
            ("negative zero", "[-0,-0.0,0]", "[-0,-0,0]"),
            (
                "beyond 2^53 loses precision like float64",
                "[123456789012345678,18446744073709551615]",
                "[123456789012345680,18446744073709552000]",
            ),
        ];
        for (name, input, want) in cases {
            assert_eq!(encode_str(input), want, "{name}");
        }
    }

    #[test]
    fn sorted_inserts_keys_in_go_order() {
        let value: Value =
            serde_json::from_str(r#"{"b":1,"a":{"d":[{"z":1,"y":2}],"c":2}}"#).expect("valid");
        let text = serde_json::to_string(&sorted(&value)).expect("serializable");
        assert_eq!(text, r#"{"a":{"c":2,"d":[{"y":2,"z":1}]},"b":1}"#);
    }
}
