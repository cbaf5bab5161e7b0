export type { ProvisionOptions, CrashHook, TaskContext, TaskHandler, WorkStats, Worker, InboxHandler, PublishOutbox } from "./types.js";
