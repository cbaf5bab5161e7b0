import { defineConfig } from "vitest/config";

// Three projects: unit (no I/O), integration (*.int.test.ts, real NATS + Redis),
// e2e (test/, real OS processes). Integration and e2e share one infrastructure setup.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: [
            "packages/*/src/**/*.test.ts",
            "services/*/src/**/*.test.ts",
            "services/*/*.test.ts",
            "test/unit/**/*.test.ts",
            "test/fuzz/**/*.test.ts",
          ],
          exclude: ["**/*.int.test.ts", "**/node_modules/**"],
        },
      },
      {
        test: {
          name: "integration",
          include: [
            "packages/*/src/**/*.int.test.ts",
            "services/*/src/**/*.int.test.ts",
            "services/*/*.int.test.ts",
            "test/fuzz/**/*.int.test.ts",
            "test/deploy/**/*.int.test.ts",
          ],
          globalSetup: ["test/setup/global-setup.ts"],
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          // the services are compiled first and run compiled (AGENTMESH_SERVICE_RUNTIME=tsx: from source)
          globalSetup: ["test/setup/build.ts", "test/setup/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
