/** Scripted model answers for critic-chain end-to-end runs (consumed per role+op, in order). */
export interface Entry {
  readonly role: string;
  readonly op: string;
  readonly output: unknown;
}

const approve = (op: string, feedback = "Looks complete and correct."): Entry => ({
  role: "critic",
  op,
  output: { decision: "approve", feedback },
});
const reject = (op: string, feedback: string): Entry => ({
  role: "critic",
  op,
  output: { decision: "reject", feedback },
});

const PLAN = {
  research_steps: ["Research the CRISPR definition", "Research who invented CRISPR"],
  expert_steps: ["Define CRISPR", "Name its inventors"],
};

/** A plan with two research steps, everything approved first time. */
export function happyPath(): Entry[] {
  return [
    { role: "planner", op: "plan", output: PLAN },
    approve("review_plan"),
    {
      role: "researcher",
      op: "research",
      output: { result: "CRISPR is a gene-editing technology based on a bacterial immune system." },
    },
    approve("review_research"),
    {
      role: "researcher",
      op: "research",
      output: { result: "CRISPR-Cas9 gene editing was developed by Jennifer Doudna and Emmanuelle Charpentier." },
    },
    approve("review_research"),
    {
      role: "expert",
      op: "answer",
      output: {
        expert_answer: "CRISPR is a gene-editing technology developed by Doudna and Charpentier.",
        expert_reasoning: "From research results 1 and 2.",
      },
    },
    approve("review_answer"),
    {
      role: "finalizer",
      op: "finalize",
      output: {
        final_answer: "CRISPR is a gene-editing technology developed by Jennifer Doudna and Emmanuelle Charpentier.",
        final_reasoning_trace:
          "Planned two research steps, researched both, the expert combined them, every critic approved.",
      },
    },
  ];
}

/** The plan critic rejects twice, then approves: retry_count ends at 2. */
export function rejectTwice(): Entry[] {
  const [first, , ...rest] = happyPath();
  return [
    first!,
    reject("review_plan", "The plan needs a step about who invented CRISPR."),
    { role: "planner", op: "plan", output: PLAN },
    reject("review_plan", "Name the inventors step explicitly."),
    { role: "planner", op: "plan", output: PLAN },
    approve("review_plan"),
    ...rest,
  ];
}
