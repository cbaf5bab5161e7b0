/**
 * The logger this package writes to: the subset of pino it uses, so a pino logger (or a child of
 * one) can be passed as is and tests can pass a recorder.
 */
export interface Log {
  info(o: object, msg?: string): void;
  warn(o: object, msg?: string): void;
  error(o: object, msg?: string): void;
  debug(o: object, msg?: string): void;
}
