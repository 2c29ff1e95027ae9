/**
 * A string as UTF-8 bytes in a buffer of exactly its size. Writing a large string to a socket (or `Buffer.from`) sizes
 * its scratch storage for the worst case, three bytes per character: the agent's peak memory under large answers
 * showed a 24 MiB allocation for each 8 MiB reply it wrote. Small strings are left to the runtime's own fast paths.
 */
const LARGE_STRING_CHARS = 64 * 1024;

export function exactUtf8(text: string): string | Buffer {
  if (text.length < LARGE_STRING_CHARS) return text;
  const bytes = Buffer.allocUnsafe(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}
