// Validates every object of rendered manifests against the Kubernetes API schemas.
//
//   node validate_schemas.mjs RENDERED.yaml...
//
// The schemas come from the npm packages pinned in package-lock.json: kubernetes-models (the
// OpenAPI document of Kubernetes v1.36, each definition compiled into an ajv validator) and its
// CRD packages for KEDA (keda.sh) and the Prometheus Operator (monitoring.coreos.com). Those
// validators check types, required fields, enums and formats, but not unknown fields: the
// package publishes no "strict" flavour (additionalProperties false), so a misspelt optional
// field passes here. check_consistency.py reads the fields lorafleet depends on by name.
//
// An object whose apiVersion/kind no pinned package describes is printed as NOT VALIDATED and
// counted on the last line; it never passes silently. Exit status: 1 if any object is invalid
// or a file cannot be read, else 0.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

// apiVersion's group -> the package that holds its models (core, group "", is kubernetes-models/v1).
const packages = {
  "keda.sh": "@kubernetes-models/keda",
  "monitoring.coreos.com": "@kubernetes-models/prometheus-operator",
};

/** The model class for apiVersion + kind, or null when no pinned package has it. */
async function modelFor(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const pkg = packages[group] ?? "kubernetes-models";
  const path = group ? `${pkg}/${group}/${version}/${kind}` : `${pkg}/${version}/${kind}`;
  try {
    const mod = await import(path);
    return mod[kind] ?? null;
  } catch (e) {
    if (e.code === "ERR_MODULE_NOT_FOUND" || e.code === "ERR_PACKAGE_PATH_NOT_EXPORTED") return null;
    throw e;
  }
}

/** kustomize's secretGenerator wraps base64 at 70 columns; the API server decodes `data` with Go's
 * encoding/base64, which skips \r and \n, so the wrapped value is what the cluster stores. The
 * schema's "byte" format allows no line breaks: validate the value the server decodes. */
function unwrapSecretData(obj) {
  if (obj.apiVersion !== "v1" || obj.kind !== "Secret" || !obj.data) return obj;
  const data = Object.fromEntries(Object.entries(obj.data).map(
    ([k, v]) => [k, typeof v === "string" ? v.replace(/[\r\n]/g, "") : v]));
  return { ...obj, data };
}

function describe(obj) {
  const ns = obj?.metadata?.namespace ? `${obj.metadata.namespace}/` : "";
  return `${obj?.apiVersion} ${obj?.kind} ${ns}${obj?.metadata?.name}`;
}

let valid = 0, invalid = 0, unvalidated = 0;
for (const file of process.argv.slice(2)) {
  let docs;
  try {
    docs = parseAllDocuments(readFileSync(file, "utf8"));
  } catch (e) {
    console.log(`FAIL ${file}: ${e.message}`);
    invalid++;
    continue;
  }
  for (const doc of docs) {
    if (doc.errors.length) {
      console.log(`FAIL ${file}: YAML: ${doc.errors[0].message}`);
      invalid++;
      continue;
    }
    const obj = doc.toJS();
    if (obj === null) continue;
    if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
      console.log(`FAIL ${file}: an object without apiVersion and kind`);
      invalid++;
      continue;
    }
    const Model = await modelFor(obj.apiVersion, obj.kind);
    if (!Model) {
      console.log(`NOT VALIDATED ${file}: ${describe(obj)}: no schema in the pinned packages`);
      unvalidated++;
      continue;
    }
    try {
      new Model(unwrapSecretData(obj)).validate();
      valid++;
    } catch (e) {
      invalid++;
      console.log(`FAIL ${file}: ${describe(obj)}`);
      for (const line of e.message.split(", ")) console.log(`  ${line}`);
    }
  }
}
console.log(`schemas: ${valid} valid, ${invalid} invalid, ${unvalidated} not validated (no schema)` +
            "; unknown fields not checked (no strict schemas in the pinned packages)");
process.exit(invalid ? 1 : 0);
