import { loadAgentConfig, startAgentsInProcess, type AgentDefinition } from "@agentmesh/agent-kit";
import { connectRedis } from "@agentmesh/session-store";
import { connectNats } from "@agentmesh/messaging";
import { loadCoordinatorConfig, startCoordinatorFromConfig } from "@agentmesh/coordinator";
import { planner } from "@agentmesh/planner";
import { critic } from "@agentmesh/critic";
import { researcher } from "@agentmesh/researcher";
import { expert } from "@agentmesh/expert";
import { finalizer } from "@agentmesh/finalizer";
import { perception } from "@agentmesh/perception";
import { memory } from "@agentmesh/memory";
import { decision } from "@agentmesh/decision";
import { createRetriever, loadRetrieverConfig } from "@agentmesh/retriever";
import { createExecutor, loadExecutorConfig } from "@agentmesh/executor";
import { createLogger, runUntilSignalled } from "@agentmesh/service-kit";

/** The agent roles that need nothing but a model. */
export const ALL_AGENTS: readonly AgentDefinition[] = [planner, critic, researcher, expert, finalizer, perception, memory, decision] as readonly AgentDefinition[];

/**
 * Runs a coordinator and every agent role in one process for local use. Each role is still its
 * own NATS micro service with its own durable consumer, exactly as when deployed one per pod.
 * The retriever and executor also build their tools (corpus search, sandboxes) here.
 */
export async function localMain(env: Record<string, string | undefined>): Promise<void> {
  let log = createLogger({ service: "local", level: "info" });
  await runUntilSignalled({
    name: "agentmesh-local",
    log,
    start: async () => {
      const ccfg = loadCoordinatorConfig(env);
      const acfg = loadAgentConfig(env);
      const rcfg = loadRetrieverConfig(env);
      const ecfg = loadExecutorConfig(env);
      log = createLogger({ service: "local", level: ccfg.logLevel });
      const retriever = createRetriever(rcfg, log);
      const executor = createExecutor(ecfg, log);
      const closeTools = () => Promise.all([retriever.close?.(), executor.close?.()]);
      try {
        const nc = await connectNats({ url: ccfg.natsUrl, name: `local-${process.pid}`, waitOnFirstConnect: false });
        const redis = await connectRedis(ccfg.redisUrl, { name: `local-${process.pid}` });
        const coordinator = await startCoordinatorFromConfig(ccfg, { nc, redis, log });
        const agents = await startAgentsInProcess([...ALL_AGENTS, ...retriever.agents, ...executor.agents], acfg, { nc, log });
        log.info({ llm: acfg.llm.baseURL ?? "offline engine" }, "coordinator and agents running");
        return {
          async stop(graceMs: number) {
            await agents.stop(graceMs);
            await coordinator.stop(graceMs);
            await nc.drain();
            await redis.quit();
            await closeTools();
          },
        };
      } catch (err) {
        await closeTools();
        throw err;
      }
    },
  });
}
