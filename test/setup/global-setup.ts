import type {} from "vitest";
import type { TestProject } from "vitest/node";
import { resolveInfra } from "./infra.js";

declare module "vitest" {
  export interface ProvidedContext {
    natsUrl: string;
    redisUrl: string;
    infraSource: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const infra = await resolveInfra();
  console.log(`[infra] ${infra.source}: ${infra.natsUrl} ${infra.redisUrl}`);
  project.provide("natsUrl", infra.natsUrl);
  project.provide("redisUrl", infra.redisUrl);
  project.provide("infraSource", infra.source);
  return () => infra.stop();
}
