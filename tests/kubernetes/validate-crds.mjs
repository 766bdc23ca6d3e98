// Validates prometheus-operator objects (monitoring.coreos.com/v1) with the
// @kubernetes-models/prometheus-operator package's validators, generated from the
// operator's Go API types (types, required fields, enums, formats), which scripts/test
// installs under target/k8s-crd-models. Used by tests/kubernetes.rs.
//
// argv[2]: that install's directory. stdin: [{"where", "object"}, ...]
// stdout: [{"where", "error": null or "message"}, ...]
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = join(process.argv[2], "node_modules/@kubernetes-models/prometheus-operator");
const items = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const { where, object } of items) {
  let error = null;
  try {
    const [group, version] = object.apiVersion.split("/");
    const file = join(root, group, version, `${object.kind}.js`);
    const model = (await import(pathToFileURL(file).href))[object.kind];
    new model(object).validate();
  } catch (e) {
    error = String(e.message ?? e);
  }
  results.push({ where, error });
}
process.stdout.write(JSON.stringify(results));
