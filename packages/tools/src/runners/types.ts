/** What a piece of code did inside a sandbox. Limits hit are not results: they are thrown `AgentmeshError`s. */
export interface CodeRunResult {
  /** False when the code raised (the exception is in `error`). */
  readonly ok: boolean;
  /** The value of the last expression, as text (JSON for JS values, `repr` for Python); null if none. */
  readonly result: string | null;
  readonly error: string | null;
  readonly stdout: string;
  readonly stderr: string;
  /** True when `result` was cut to the output cap. */
  readonly truncated: boolean;
  /** Time the code ran, start-up excluded. */
  readonly durationMs: number;
}

/** Whether a runner can isolate code here, and how. */
export interface SandboxStatus {
  readonly available: boolean;
  /** The boundary in force, or why there is none. */
  readonly detail: string;
}

/** Options of one run. */
export interface RunOptions {
  /** Stops the run at once (the executor's deadline, a cancel): the interpreter is killed. */
  readonly signal?: AbortSignal;
  /** Called when the code is handed to a started interpreter: its time limit runs from here. */
  readonly onStart?: () => void;
}

/** A code runner with a real isolation boundary. */
export interface CodeRunner {
  readonly language: "javascript" | "python";
  /**
   * Runs `code` in a fresh interpreter that nothing else has used. Throws an `AgentmeshError`:
   * `timeout` (time limit), `resource_exhausted` (memory or output cap), `sandbox_unavailable`.
   */
  run(code: string, opts?: RunOptions): Promise<CodeRunResult>;
  status(): Promise<SandboxStatus>;
  /** Kills warm interpreters; later runs fail. */
  close(): Promise<void>;
}
