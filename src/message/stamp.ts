/**
 * A base class whose constructor returns the object it is given, so that a
 * subclass's private field initializers run on that object: how the runtime
 * brands objects it made (control messages in control-authority.ts, sealed
 * JSON in sealed-json.ts). No property, reflection or copy carries such a
 * brand, and only the module that declares the subclass can add it.
 * @internal
 */
export class Stamp {
  constructor(target: object) {
    // The point: the subclass's field initializers then run on `target`, stamping it.
    return target;
  }
}
