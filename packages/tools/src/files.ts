/**
 * A file shipped with this package's modules (a worker, the Python child), by its path from the
 * top of `src/`, or of `dist/` once compiled. This module sits at that top, and `pnpm build`
 * bundles the package into `dist/index.js` there too, so the path holds under tsx and compiled
 * alike; a module deeper in the tree would find files beside itself only under tsx.
 */
export const packageFile = (path: string): URL => new URL(path, import.meta.url);
