/** Significant digits every exact computation carries. */
export declare const CALC_PRECISION: 64;

/** The outcome of evaluating an arithmetic expression exactly. */
export type CalcResult =
  | {
      readonly ok: true;
      /** The expression as the parser re-prints it (normalised spacing and operators). */
      readonly expression: string;
      /** The value in plain decimal notation where it fits, else scientific notation. */
      readonly value: string;
      /** False when the value was rounded to CALC_PRECISION significant digits (1/3, sqrt(2)). */
      readonly exact: boolean;
    }
  | {
      readonly ok: false;
      readonly expression: string;
      readonly reason: string;
      /** True when the input is arithmetic that was refused (1/0, too large); false when it is not plain arithmetic at all. */
      readonly arithmetic: boolean;
    };

/** Names an expression may mention: the callable functions and the constants. */
export declare const CALC_NAMES: ReadonlySet<string>;

/**
 * Evaluates an arithmetic expression exactly (decimal arithmetic with CALC_PRECISION significant
 * digits, so 0.1 + 0.2 is 0.3 and 18-digit products are exact). Only numbers, + - * / ^ % mod,
 * parentheses, pi, e and a short list of functions are allowed; everything else is refused.
 */
export declare function evaluateExact(input: string): CalcResult;

/** True when two decimal strings denote the same number (used to check a stated answer). */
export declare function sameNumber(a: string, b: string): boolean;
