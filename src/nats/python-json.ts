import type { JsonValue } from "../message/json.js";
import type { WireMessage } from "../message/wire.js";

/**
 * Writes the envelope as Python's `json.dumps(envelope)` does, byte for
 * byte: `", "` and `": "` separators, every character outside printable
 * ASCII escaped (`ensure_ascii`, `\u` and four lowercase hex digits, surrogate pairs for
 * astral characters), floats as Python's `repr` writes them, and the
 * `timestamp` always as a float (`1764690000.0`). JavaScript cannot tell
 * `1.0` from `1`: any other whole number up to 2^53 is written as an
 * integer (beyond, as a float, as MessagePack does), and integer-like object
 * keys come first, as in every JavaScript object.
 * @internal
 */
export function pythonJsonText(wire: WireMessage): string {
  let text = "{";
  let first = true;
  for (const key in wire) {
    const value = (wire as unknown as Record<string, JsonValue>)[key] as JsonValue;
    text += (first ? "" : ", ") + pythonString(key) + ": " + (key === "timestamp" ? pythonFloat(value as number) : pythonValue(value));
    first = false;
  }
  return text + "}";
}

function pythonValue(value: JsonValue): string {
  switch (typeof value) {
    case "string":
      return pythonString(value);
    case "number":
      // Beyond 2^53 a whole number is a float for MessagePack too (and a Python int that large would not have survived JSON.parse).
      return Number.isSafeInteger(value) ? String(value === 0 ? 0 : value) : pythonFloat(value);
    case "boolean":
      return value ? "true" : "false";
    default: {
      if (value === null) return "null";
      if (Array.isArray(value)) return "[" + value.map(pythonValue).join(", ") + "]";
      let text = "{";
      let first = true;
      for (const key in value) {
        text += (first ? "" : ", ") + pythonString(key) + ": " + pythonValue(value[key] as JsonValue);
        first = false;
      }
      return text + "}";
    }
  }
}

/**
 * Python's `repr(float)`: the shortest digits that read back as the same
 * double (as JavaScript's), in positional notation for exponents -4 to 15
 * (with a `.0` when whole) and scientific otherwise (`1e-05`, `1.5e+16`).
 */
export function pythonFloat(value: number): string {
  if (Object.is(value, -0)) return "-0.0";
  const [mantissa = "0", exponentText = "0"] = value.toExponential().split("e");
  const exponent = Number(exponentText);
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  const sign = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const abs = Math.abs(exponent);
    return `${sign}${head}e${exponent < 0 ? "-" : "+"}${abs < 10 ? "0" : ""}${abs}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
  const fraction = digits.slice(exponent + 1);
  return `${sign}${whole}.${fraction.length > 0 ? fraction : "0"}`;
}

const ESCAPES: Record<string, string> = { "\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f" };

/** A string as Python's `json.dumps` writes it with `ensure_ascii` (the default). */
function pythonString(value: string): string {
  return '"' + value.replace(/[\\"\u0000-\u001f\u007f-\uffff]/g, (c) => ESCAPES[c] ?? "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0")) + '"';
}
