import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";

const cache = new Map<string, RegExp>();

/** One element of a glob: a run of characters or a character class matches exactly one character each. */
type Token = { readonly kind: "star" } | { readonly kind: "one"; readonly source: string };

/**
 * Compiles a shell-style glob (`*` any run of characters, `?` one character,
 * `[abc]` / `[!abc]` a character class, `[a-z]` a range) to an anchored
 * regular expression. The syntax follows Python's `fnmatch`: a `]` right
 * after `[` or `[!` is a member of the class, a `[` without a closing `]`
 * is a literal, an empty range such as `[z-a]` matches nothing. Characters
 * are code points, so `?` matches one emoji.
 *
 * The expression runs in time linear in the pattern's number of stars times
 * the name's length: every run between two stars is matched at its earliest
 * position with an atomic look-ahead, so no pattern (`*a*a*a*a*b`) can make
 * it backtrack exponentially.
 *
 * @throws {@link InvalidArgumentError} when `pattern` is not a string.
 */
export function globToRegExp(pattern: string): RegExp {
  if (typeof pattern !== "string") {
    throw new InvalidArgumentError("pattern", `a glob pattern must be a string such as "worker-*", got ${describeValue(pattern)}`);
  }
  let compiled = cache.get(pattern);
  if (compiled !== undefined) return compiled;
  // Split into runs of fixed-width elements separated by stars.
  const segments: string[][] = [[]];
  for (const token of tokenize(pattern)) {
    if (token.kind === "star") segments.push([]);
    else (segments[segments.length - 1] as string[]).push(token.source);
  }
  const first = (segments[0] as string[]).join("");
  let source: string;
  if (segments.length === 1) {
    source = first;
  } else {
    const last = (segments[segments.length - 1] as string[]).join("");
    let middle = "";
    let group = 0;
    for (const segment of segments.slice(1, -1)) {
      if (segment.length === 0) continue; // consecutive stars
      group++;
      // (?=(.*?X))\N: find the earliest X, then consume it atomically.
      middle += `(?=(.*?${segment.join("")}))\\${group}`;
    }
    source = `${first}${middle}.*${last}`;
  }
  compiled = new RegExp(`^${source}$`, "su");
  if (cache.size > 1000) cache.clear();
  cache.set(pattern, compiled);
  return compiled;
}

/**
 * Whether `name` matches the glob `pattern`.
 * @throws {@link InvalidArgumentError} when `pattern` is not a string.
 */
export function matchesGlob(name: string, pattern: string): boolean {
  return globToRegExp(pattern).test(name);
}

function tokenize(pattern: string): Token[] {
  const chars = [...pattern];
  const tokens: Token[] = [];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    if (c === "*") {
      tokens.push({ kind: "star" });
    } else if (c === "?") {
      tokens.push({ kind: "one", source: "." });
    } else if (c === "[") {
      let j = i + 1;
      if (chars[j] === "!") j++;
      if (chars[j] === "]") j++;
      while (j < chars.length && chars[j] !== "]") j++;
      if (j >= chars.length) {
        tokens.push({ kind: "one", source: "\\[" });
      } else {
        tokens.push({ kind: "one", source: characterClass(chars.slice(i + 1, j)) });
        i = j;
      }
    } else {
      tokens.push({ kind: "one", source: c.replace(/[.+^${}()|[\]\\/*?]/g, "\\$&") });
    }
  }
  return tokens;
}

/** The regular expression for the class body between `[` and `]` (a leading `!` negates). */
function characterClass(body: string[]): string {
  const negated = body[0] === "!";
  const members = negated ? body.slice(1) : body;
  let items = "";
  for (let k = 0; k < members.length; k++) {
    const lo = members[k] as string;
    const hi = members[k + 2];
    if (members[k + 1] === "-" && hi !== undefined) {
      k += 2;
      if ((lo.codePointAt(0) as number) <= (hi.codePointAt(0) as number)) items += `${escapeInClass(lo)}-${escapeInClass(hi)}`;
      // an empty range (z-a) matches nothing, as in fnmatch
    } else {
      items += escapeInClass(lo);
    }
  }
  if (items.length === 0) return negated ? "." : "(?!)";
  return `[${negated ? "^" : ""}${items}]`;
}

function escapeInClass(c: string): string {
  return /[\\\]^[-]/.test(c) ? `\\${c}` : c;
}
