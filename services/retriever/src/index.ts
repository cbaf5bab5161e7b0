export { createRetriever } from "./definition.js";
export { loadRetrieverConfig, type RetrieverConfig } from "./config.js";
