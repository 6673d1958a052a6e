import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError, InvalidWireMessageError } from "../errors/errors.js";
import type { Message } from "../message/message.js";
import { fromWire } from "../message/from-wire.js";
import { readMessage, toWire } from "../message/to-wire.js";
import { checkWireSize, type WireMessage } from "../message/wire.js";
import { decodeMsgpack } from "./msgpack-decode.js";
import { encodeMsgpackEnvelope, encodeMsgpackMessage, encodeMsgpackShared, utf8Bytes } from "./msgpack-envelope.js";
import { readRegularEnvelope } from "./msgpack-reader.js";
import { pythonJsonText } from "./python-json.js";

/**
 * How envelopes are encoded on the bus, as Python Civitas's serializers:
 * `"msgpack"` (MessagePack, Python's default) or `"json"` (UTF-8 JSON).
 * A reader takes either, whatever it writes.
 */
export type WireSerializer = "json" | "msgpack";

/** The serializers, for checking an option. */
const SERIALIZERS: readonly WireSerializer[] = ["msgpack", "json"];

/**
 * Throws `INVALID_ARGUMENT` unless `value` names a {@link WireSerializer}.
 * @internal
 */
export function checkSerializer(value: unknown, where: string): asserts value is WireSerializer {
  if (!SERIALIZERS.includes(value as WireSerializer)) {
    throw new InvalidArgumentError("serializer", `${where}: serializer must be "msgpack" or "json", got ${describeValue(value)}`);
  }
}

/**
 * Encodes a wire-form envelope as Python Civitas does: MessagePack as
 * `msgpack.packb(envelope)`, JSON as `json.dumps(envelope).encode()`, byte
 * for byte (see docs/nats.md for the two limits JavaScript numbers and keys set).
 *
 * @throws {@link InvalidArgumentError} for an unknown serializer.
 * @example
 * ```ts
 * const bytes = encodeWire(toWire(message), "msgpack");
 * ```
 */
export function encodeWire(wire: WireMessage, serializer: WireSerializer = "msgpack"): Uint8Array {
  if (serializer === "msgpack") return encodeMsgpackEnvelope(wire);
  checkSerializer(serializer, "encodeWire");
  return utf8Bytes(pythonJsonText(wire));
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Decodes bytes from the bus into the envelope object they carry, telling
 * the two encodings apart by the first byte: a MessagePack map (`0x80`-`0x8f`,
 * `0xde`, `0xdf`) or JSON text (`{`, or JSON whitespace). The result is not
 * yet checked: pass it to `fromWire`, or use {@link decodeMessage}.
 *
 * @throws {@link InvalidWireMessageError} (`INVALID_WIRE_MESSAGE`) for empty
 *   input, a first byte that starts neither, malformed MessagePack (truncated,
 *   trailing bytes, a `__proto__` key), invalid UTF-8 or invalid JSON.
 */
export function decodeWire(bytes: Uint8Array): unknown {
  if (!(bytes instanceof Uint8Array)) throw new InvalidWireMessageError(`decodeWire needs the bytes of a message, got ${describeValue(bytes)}`);
  const first = bytes[0];
  if (first === undefined) throw new InvalidWireMessageError("wire message is empty: expected a MessagePack map or a JSON object");
  if ((first >= 0x80 && first <= 0x8f) || first === 0xde || first === 0xdf) {
    try {
      return decodeMsgpack(bytes);
    } catch (error) {
      throw new InvalidWireMessageError(`wire message is not valid MessagePack: ${(error as Error).message}`, { cause: error });
    }
  }
  if (first === 0x7b || first === 0x20 || first === 0x09 || first === 0x0a || first === 0x0d) {
    let text: string;
    try {
      text = strictUtf8.decode(bytes);
    } catch (error) {
      throw new InvalidWireMessageError("wire message is not valid UTF-8 JSON: it holds bytes that are not UTF-8", { cause: error });
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new InvalidWireMessageError(`wire message is not valid JSON: ${(error as Error).message}`, { cause: error });
    }
  }
  throw new InvalidWireMessageError(`wire message starts with byte 0x${first.toString(16).padStart(2, "0")}, neither a MessagePack map (0x80-0x8f, 0xde, 0xdf) nor a JSON object ('{'); the sender speaks another protocol`);
}

/**
 * Encodes a message for the bus: `encodeWire(toWire(message), serializer)`.
 * @throws {@link InvalidWireMessageError} when `message` is not a message.
 * @example
 * ```ts
 * nc.publish(`civitas.agent.${message.recipient}`, encodeMessage(message, "json"));
 * ```
 */
export function encodeMessage(message: Message, serializer: WireSerializer = "msgpack"): Uint8Array {
  return serializer === "msgpack" ? encodeMsgpackMessage(readMessage(message)) : encodeWire(toWire(message), serializer);
}

/**
 * {@link encodeMessage} for bytes handed to the NATS connection: MessagePack
 * as a view into a buffer shared with other envelopes (never written over,
 * so the connection may hold it as long as it likes), rather than an array
 * allocated for each.
 * @internal
 */
export function encodeForBus(message: Message, serializer: WireSerializer): Uint8Array {
  return serializer === "msgpack" ? encodeMsgpackShared(readMessage(message)) : encodeWire(toWire(message), serializer);
}

/**
 * Decodes and checks a message from the bus, in either encoding:
 * `fromWire(decodeWire(bytes))`.
 * @throws {@link InvalidWireMessageError} for anything that is not a valid envelope, or over `MAX_WIRE_BYTES`.
 */
export function decodeMessage(bytes: Uint8Array): Message {
  checkWireSize(bytes.length);
  // A regular MessagePack envelope is read straight into the message; anything else takes the general path.
  return (bytes instanceof Uint8Array ? readRegularEnvelope(bytes) : undefined) ?? fromWire(decodeWire(bytes));
}
