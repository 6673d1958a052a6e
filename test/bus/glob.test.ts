import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { globToRegExp, matchesGlob } from "../../src/bus/glob.js";

/**
 * A deliberately naive reference: parse the glob into per-character tests
 * and stars, then match by memoised recursion over code points. Semantics
 * follow Python's fnmatch: `]` right after `[` or `[!` is a class member, an
 * unclosed `[` is a literal, `a-z` is a range and an empty range matches nothing.
 */
type RefToken = "*" | ((c: string) => boolean);

function referenceTokens(pattern: string): RefToken[] {
  const p = [...pattern];
  const tokens: RefToken[] = [];
  let i = 0;
  while (i < p.length) {
    const c = p[i] as string;
    if (c === "*") {
      tokens.push("*");
      i++;
      continue;
    }
    if (c === "?") {
      tokens.push(() => true);
      i++;
      continue;
    }
    if (c === "[") {
      let j = i + 1;
      const negated = p[j] === "!";
      if (negated) j++;
      const first = j;
      if (p[j] === "]") j++;
      while (j < p.length && p[j] !== "]") j++;
      if (j < p.length) {
        const members = p.slice(first, j);
        const ranges: [number, number][] = [];
        for (let k = 0; k < members.length; k++) {
          const lo = (members[k] as string).codePointAt(0) as number;
          if (members[k + 1] === "-" && k + 2 < members.length) {
            ranges.push([lo, (members[k + 2] as string).codePointAt(0) as number]);
            k += 2;
          } else {
            ranges.push([lo, lo]);
          }
        }
        tokens.push((ch) => {
          const code = ch.codePointAt(0) as number;
          return ranges.some(([lo, hi]) => lo <= code && code <= hi) !== negated;
        });
        i = j + 1;
        continue;
      }
    }
    tokens.push((ch) => ch === c);
    i++;
  }
  return tokens;
}

function referenceMatch(pattern: string, name: string): boolean {
  const tokens = referenceTokens(pattern);
  const chars = [...name];
  const memo = new Map<string, boolean>();
  const go = (t: number, s: number): boolean => {
    const key = `${t},${s}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    let result: boolean;
    if (t === tokens.length) result = s === chars.length;
    else {
      const token = tokens[t] as RefToken;
      if (token === "*") result = go(t + 1, s) || (s < chars.length && go(t, s + 1));
      else result = s < chars.length && token(chars[s] as string) && go(t + 1, s + 1);
    }
    memo.set(key, result);
    return result;
  };
  return go(0, 0);
}

const patternChars = ["a", "b", "z", "-", "!", "^", ".", "\\", "/", "$", "(", "😀", "*", "?", "[", "]"];
const nameChars = ["a", "b", "z", "-", "!", "^", ".", "\\", "/", "$", "(", "😀", "[", "]", "*", "?"];
const patternArb = fc.array(fc.constantFrom(...patternChars), { maxLength: 10 }).map((cs) => cs.join(""));
const nameArb = fc.array(fc.constantFrom(...nameChars), { maxLength: 10 }).map((cs) => cs.join(""));

/** A name that matches `pattern` more often than chance: replace each glob element by something it could match. */
const nearMatchArb = patternArb.chain((pattern) =>
  fc
    .array(fc.constantFrom("", "a", "b", "ab", "-", "z"), { minLength: pattern.length, maxLength: pattern.length })
    .map((fill) => {
      const name = [...pattern].map((c, i) => (c === "*" ? (fill[i] ?? "") : c === "?" ? "a" : c)).join("");
      return [pattern, name] as const;
    }),
);

describe("globToRegExp", () => {
  it("agrees with a naive reference matcher on random patterns and names", () => {
    let matched = 0;
    fc.assert(
      fc.property(patternArb, nameArb, (pattern, name) => {
        const expected = referenceMatch(pattern, name);
        if (expected) matched++;
        expect(globToRegExp(pattern).test(name), `${JSON.stringify(pattern)} vs ${JSON.stringify(name)}`).toBe(expected);
      }),
      { numRuns: 3000 },
    );
    expect(matched).toBeGreaterThan(0);
  });

  it("agrees with the reference on names built to (nearly) match the pattern", () => {
    let matched = 0;
    fc.assert(
      fc.property(nearMatchArb, ([pattern, name]) => {
        const expected = referenceMatch(pattern, name);
        if (expected) matched++;
        expect(matchesGlob(name, pattern), `${JSON.stringify(pattern)} vs ${JSON.stringify(name)}`).toBe(expected);
      }),
      { numRuns: 3000 },
    );
    // the generator must actually exercise positive matches
    expect(matched).toBeGreaterThan(300);
  });

  it.each([
    ["a*", "abc", true],
    ["a*", "ba", false],
    ["a?c", "abc", true],
    ["a?c", "ac", false],
    ["[abc]x", "bx", true],
    ["[abc]x", "dx", false],
    ["[!abc]x", "dx", true],
    ["[!abc]x", "ax", false],
    ["[]]", "]", true],
    ["[!]]", "]", false],
    ["[!]]", "a", true],
    ["[!]", "[!]", true],
    ["[!]", "x", false],
    ["[]", "[]", true],
    ["[abc", "[abc", true],
    ["[a-c]", "b", true],
    ["[a-c]", "d", false],
    ["[a-]", "-", true],
    ["[z-a]", "z", false],
    ["[!z-a]", "q", true],
    ["a.b", "a.b", true],
    ["a.b", "axb", false],
    ["^$", "^$", true],
    ["a\\b", "a\\b", true],
    ["a?", "a😀", true],
    ["*", "", true],
    ["", "", true],
    ["", "a", false],
  ])("globToRegExp(%j) on %j is %s", (pattern, name, expected) => {
    expect(globToRegExp(pattern).test(name)).toBe(expected);
    expect(referenceMatch(pattern, name)).toBe(expected);
  });

  it("compiles every pattern without throwing, including empty and reversed ranges", () => {
    fc.assert(
      fc.property(patternArb, (pattern) => {
        expect(globToRegExp(pattern)).toBeInstanceOf(RegExp);
      }),
      { numRuns: 2000 },
    );
  });

  it("does not backtrack catastrophically on many stars", () => {
    // With a naive `.*a.*a.*…` translation this takes minutes (polynomial in the name length per star).
    const pattern = `${"*a".repeat(12)}*b`;
    expect(globToRegExp(pattern).test("a".repeat(255))).toBe(false);
    expect(globToRegExp(pattern).test(`${"a".repeat(254)}b`)).toBe(true);
  });
});
