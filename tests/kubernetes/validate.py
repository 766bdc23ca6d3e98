"""Validates Kubernetes objects against Kubernetes' own JSON schemas, strictly (an
unknown field is an error), with the kubernetes-validate package that scripts/test
installs into target/k8s-validate. Used by tests/kubernetes.rs.

stdin: {"versions": ["1.30", ...], "objects": [{"where": "...", "object": {...}}, ...]}
stdout: [{"where": "...", "version": "1.30", "error": null or "message"}, ...]
"""

import json
import sys

import kubernetes_validate

request = json.load(sys.stdin)
results = []
for version in request["versions"]:
    for item in request["objects"]:
        try:
            kubernetes_validate.validate(item["object"], version, strict=True)
            error = None
        except kubernetes_validate.ValidationError as e:
            path = ".".join(str(p) for p in e.path)
            error = f"{path}: {e.message}"
        except kubernetes_validate.SchemaNotFoundError as e:
            error = f"no schema: {e}"
        results.append({"where": item["where"], "version": version, "error": error})
json.dump(results, sys.stdout)
