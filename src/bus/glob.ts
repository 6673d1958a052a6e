const cache = new Map<string, RegExp>();

/**
 * Compiles a shell-style glob (`*` any run of characters, `?` one character,
 * `[abc]` / `[!abc]` a character class) to an anchored regular expression.
 */
export function globToRegExp(pattern: string): RegExp {
  let compiled = cache.get(pattern);
  if (compiled !== undefined) return compiled;
  let source = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === "*") source += ".*";
    else if (c === "?") source += ".";
    else if (c === "[") {
      const end = pattern.indexOf("]", i + 2);
      if (end === -1) source += "\\[";
      else {
        let body = pattern.slice(i + 1, end);
        const negated = body.startsWith("!");
        if (negated) body = body.slice(1);
        source += `[${negated ? "^" : ""}${body.replace(/[\\^\]]/g, "\\$&")}]`;
        i = end;
      }
    } else source += c.replace(/[.+^${}()|\\\]]/g, "\\$&");
  }
  compiled = new RegExp(`^${source}$`, "s");
  if (cache.size > 1000) cache.clear();
  cache.set(pattern, compiled);
  return compiled;
}

/** Whether `name` matches the glob `pattern`. */
export function matchesGlob(name: string, pattern: string): boolean {
  return globToRegExp(pattern).test(name);
}
