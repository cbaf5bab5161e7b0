// The one front door of @agentmesh/messaging: NATS, JetStream work queues, `$SRV`, headers, wire errors.
export type { Log } from "./log.js";
export { connectNats, parseNatsUrl, type ConnectNatsOptions, type ParsedNatsUrl } from "./connect.js";
export { linkHealth, type LinkHealth } from "./link-health.js";
export { provision, replicasCurrent } from "./provision.js";
export {
  natsPermissions,
  replyPrefix,
  SERVICE_USERS,
  type ServiceUser,
  type UserPermissions,
  type SubjectRules,
} from "./permissions.js";
export {
  natsAccountName,
  natsRouteUrl,
  natsServerConfig,
  newUserKey,
  publicKeyOfSeed,
  type NatsClusterConfig,
  type NatsServerConfigOptions,
} from "./nats-config.js";
export { createPublisher, type Publisher, type PublisherOptions, type TokenEvent } from "./publisher.js";
export { newTraceparent, traceparentOf, type MessageContext } from "./trace.js";
export { startWorker, type WorkerOptions } from "./worker.js";
export { startInboxConsumer, type InboxConsumerOptions } from "./inbox-consumer.js";
export { consumerLagReader, type ConsumerLag, type ConsumerLagReader } from "./consumer-lag.js";
export {
  createMicroService,
  type MicroService,
  type MicroServiceOptions,
  type EndpointHandler,
  type EndpointOptions,
} from "./micro.js";
export { request, listServices, type ServiceSummary, type ServiceInfo, type ServiceStats } from "./request.js";
export {
  createTokenDedup,
  decodeEvents,
  followEvents,
  type DecodedEvents,
  followTokens,
  onItsSubject,
  type FollowEventsOptions,
  type TokenDedup,
  type TokenDelta,
} from "./events.js";
export {
  readStoredEvents,
  startEventFeed,
  type EventFeed,
  type EventFeedHandlers,
  type FeedMessage,
  type StoredEventBatch,
  type StoredMessage,
  type StoredToken,
} from "./event-feed.js";
export { startDeadLetterMover, listDeadLetters, redriveDeadLetter, type DeadLetter } from "./dead-letters.js";
export type {
  ProvisionOptions,
  CrashHook,
  TaskContext,
  TaskHandler,
  TaskSettledHook,
  TaskSettlement,
  WorkStats,
  Worker,
  InboxContext,
  InboxHandler,
  PublishOutbox,
  WireError,
} from "./types.js";
