/**
 * The checks on the free text of a pause decision: who approved or denied
 * it and why a pause was asked for, bounded and legible before they reach a
 * marker, a receipt or a span.
 * @module
 */
import { describeValue } from "../errors/civitas-error.js";
import { InvalidApproverError, InvalidArgumentError } from "../errors/errors.js";

/**
 * A character that shows: a letter, digit, punctuation or symbol, but not
 * the ones that render as blank (the Hangul fillers U+115F, U+1160, U+3164,
 * U+FFA0 and the Braille blank U+2800).
 */
const VISIBLE = /(?![\u115F\u1160\u3164\uFFA0\u2800])[\p{L}\p{N}\p{P}\p{S}]/u;
/**
 * Control characters (NUL, BEL, newline …), lone surrogates, and the bidi
 * embedding, override and isolate controls (U+202A-U+202E, U+2066-U+2069),
 * which make a name display as another ("\u202Eecila" shows as "alice"):
 * nothing an audit row should name someone with.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cs}\u202A-\u202E\u2066-\u2069]/u;

/**
 * The most characters (Unicode code points) an approver, a decider or a
 * reason may have: they are written into markers, receipts and spans, which
 * must stay bounded whatever a caller passes.
 */
const MAX_DECISION_TEXT_LENGTH = 1024;

/** How many characters (code points) `text` has, when that is more than {@link MAX_DECISION_TEXT_LENGTH}; else `undefined`. */
function overLength(text: string): number | undefined {
  if (text.length <= MAX_DECISION_TEXT_LENGTH) return undefined; // a code point is one or two UTF-16 units
  let characters = 0;
  for (const _ of text) characters++;
  return characters > MAX_DECISION_TEXT_LENGTH ? characters : undefined;
}

/**
 * Checks an approver (or a decider): a string with at least one visible
 * character (not only whitespace, invisible format characters or
 * blank-rendering fillers), no control characters, lone surrogates or bidi
 * overrides, and at most {@link MAX_DECISION_TEXT_LENGTH} characters, so that
 * a resume (or a deny: `call`) always names someone, legibly and in
 * bounded space.
 * @throws {@link InvalidApproverError}
 * @internal
 */
export function assertApprover(agent: string, approver: unknown, call: "resume" | "deny" = "resume"): asserts approver is string {
  if (typeof approver !== "string" || !(isPrintableAscii(approver) || (VISIBLE.test(approver) && !UNPRINTABLE.test(approver)))) {
    throw new InvalidApproverError(agent, approver, call);
  }
  const length = overLength(approver);
  if (length !== undefined) {
    throw new InvalidApproverError(agent, approver, call, `got one of ${length} characters, more than the ${MAX_DECISION_TEXT_LENGTH} allowed; pass a name or an id, and keep longer text out of it`);
  }
}

/**
 * Checks a reason (of a suspend, or a denial): a string of at most
 * {@link MAX_DECISION_TEXT_LENGTH} characters. `call` names the call in the
 * error, e.g. `suspend('payer')`.
 * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`, argument `reason`)
 * @internal
 */
export function assertReason(call: string, reason: unknown): asserts reason is string {
  if (typeof reason !== "string") {
    throw new InvalidArgumentError("reason", `${call} needs a string reason, got ${describeValue(reason)}`);
  }
  const length = overLength(reason);
  if (length !== undefined) {
    throw new InvalidArgumentError("reason", `${call} needs a reason of at most ${MAX_DECISION_TEXT_LENGTH} characters, got one of ${length}; keep the reason short and put the details in the agent's state`);
  }
}

/**
 * Whether {@link assertReason} accepts `reason` without counting its
 * characters: a string of at most {@link MAX_DECISION_TEXT_LENGTH} UTF-16
 * units. Callers check this first and name the call only for the rest.
 * @internal
 */
export function isPlainReason(reason: unknown): reason is string {
  return typeof reason === "string" && reason.length <= MAX_DECISION_TEXT_LENGTH;
}

/** Printable ASCII with at least one character that is not a space: the common case, checked without the Unicode regexes (which cost about a microsecond). */
function isPrintableAscii(text: string): boolean {
  let visible = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code > 0x7e) return false;
    if (code !== 0x20) visible = true;
  }
  return visible;
}
