// Test doubles for the model port: never imported by production code.
export {
  createScriptedModel,
  type ScriptEntry,
  type ScriptedCall,
  type ScriptedModel,
  type ScriptedModelOptions,
} from "./scripted.js";
export {
  startScriptedOpenAIServer,
  type HttpScriptEntry,
  type ScriptedHttpCall,
  type ScriptedServer,
  type ScriptedServerOptions,
} from "./scripted-server.js";
export {
  scriptedEmbedding,
  type ScriptedEmbeddingCall,
  type ScriptedEmbeddingsOptions,
} from "./scripted-embeddings.js";
export { runModelConformance, type ConformanceAnswer, type ModelFactory } from "./conformance.js";
