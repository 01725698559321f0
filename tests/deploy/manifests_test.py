#!/usr/bin/env python3
"""Offline checks of deploy/: the Kubernetes manifests and the Containerfile.

No cluster, container runtime or registry is needed (or reachable): every
YAML document is parsed and its structure checked by kind; the TF_CONFIG
each pod would get (written by the TFJob operator, or by plain/'s entry
script run under sh) is checked by `psflow server --check-config`, the
server's own validation. Run by ctest (deploy_manifests_test):

  python3 tests/deploy/manifests_test.py --psflow build/psflow
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PSFLOW = ""  # The psflow binary under test (--psflow).

DEPLOY = os.path.join(SOURCE_DIR, "deploy")
KUBERNETES = os.path.join(DEPLOY, "kubernetes")
PLAIN = os.path.join(KUBERNETES, "plain")
TIMEOUT = 60  # Seconds any one command may take.

# The port the tasks listen on, which the TFJob operator finds by the
# container and port names.
PORT = 2222
TFJOB_CONTAINER = "tensorflow"
TFJOB_PORT_NAME = "tfjob-port"
# The gRPC service each role serves (checked against proto/ below).
ROLE_SERVICE = {"ps": "psflow.v1.VariableService", "worker": "psflow.v1.ExecutorService"}

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

# The fields of the Kubernetes API (v1.29) these manifests may use: a guard
# against misspelt keys, which Kubernetes would drop or refuse.
POD_SPEC_KEYS = {
    "containers", "initContainers", "volumes", "restartPolicy", "terminationGracePeriodSeconds",
    "securityContext", "subdomain", "hostname", "serviceAccountName", "nodeSelector",
    "affinity", "tolerations", "imagePullSecrets", "priorityClassName",
}
CONTAINER_KEYS = {
    "name", "image", "imagePullPolicy", "command", "args", "env", "envFrom", "ports",
    "readinessProbe", "livenessProbe", "startupProbe", "resources", "volumeMounts",
    "securityContext", "workingDir", "lifecycle",
}
PROBE_KEYS = {
    "grpc", "httpGet", "tcpSocket", "exec", "initialDelaySeconds", "periodSeconds",
    "timeoutSeconds", "successThreshold", "failureThreshold", "terminationGracePeriodSeconds",
}
FIELD_REFS = {"metadata.name", "metadata.namespace", "status.podIP", "spec.nodeName"}


def load_documents(path):
    with open(path, encoding="utf-8") as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


def manifest_files():
    out = []
    for root, _, files in os.walk(KUBERNETES):
        out.extend(os.path.join(root, f) for f in sorted(files) if f.endswith((".yaml", ".yml")))
    return sorted(out)


def all_documents():
    return [(path, doc) for path in manifest_files() for doc in load_documents(path)]


def containerfile_uid():
    with open(os.path.join(DEPLOY, "Containerfile"), encoding="utf-8") as f:
        users = re.findall(r"^USER\s+(\d+)(?::(\d+))?\s*$", f.read(), re.M)
    return int(users[-1][0]) if users else None


def pod_templates(doc):
    """(role, replicas, template, workload) for each pod template of a document."""
    kind = doc.get("kind")
    if kind == "TFJob":
        for rtype, spec in doc["spec"]["tfReplicaSpecs"].items():
            yield rtype.lower(), spec.get("replicas", 1), spec["template"], doc
    elif kind == "StatefulSet":
        role = doc["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]
        yield role, doc["spec"].get("replicas", 1), doc["spec"]["template"], doc
    elif kind == "Job":
        role = doc["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]
        yield role, doc["spec"].get("completions", 1), doc["spec"]["template"], doc


def main_container(template, doc):
    containers = template["spec"]["containers"]
    if doc["kind"] == "TFJob":
        return next(c for c in containers if c["name"] == TFJOB_CONTAINER)
    return containers[0]


def synthesize_tf_config(hosts_by_role, role, index):
    """The TF_CONFIG JSON the Kubeflow TFJob operator writes: Go's
    json.Marshal of {cluster, task, environment}, jobs sorted, compact."""
    cluster = {job: [f"{host}:{PORT}" for host in hosts] for job, hosts in
               sorted(hosts_by_role.items())}
    config = {"cluster": cluster, "task": {"type": role, "index": index},
              "environment": "cloud"}
    return json.dumps(config, separators=(",", ":"))


def pod_environment(container, namespace, pod_name, pod_ip):
    """The environment Kubernetes gives the container, as a dict."""
    env = {}
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = expand(str(item["value"]), env)
        else:
            path = item["valueFrom"]["fieldRef"]["fieldPath"]
            env[item["name"]] = {"metadata.namespace": namespace, "metadata.name": pod_name,
                                 "status.podIP": pod_ip, "spec.nodeName": "node-0"}[path]
    return env


def drop_tls_dir(env):
    """The environment without PSFLOW_TLS_DIR: the secret it names is not
    mounted here and --check-config would check the credentials in it
    (test_every_pod_has_its_tls_credentials_from_a_secret checks the mount)."""
    env.pop("PSFLOW_TLS_DIR", None)
    return env


def expand(text, env):
    """Kubernetes' $(VAR) expansion in command, args and env values: a
    defined variable is replaced, an undefined reference is kept, $$ escapes."""
    def replace(m):
        if m.group(0).startswith("$$"):
            return m.group(0)[1:]
        return env.get(m.group(1), m.group(0))
    return re.sub(r"\$\$\([A-Za-z_][A-Za-z0-9_]*\)|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", replace, text)


def bind_port(args):
    for arg in args:
        m = re.match(r"^--bind=(?:\[[^]]*\]|[^:]*):(\d+)$", arg)
        if m:
            return int(m.group(1))
    return None


def run(argv, env, stdin=None):
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT,
                          input=stdin, check=False)


def base_environment(path_dir):
    """A clean environment: this PATH (with `path_dir` first), no TF_CONFIG."""
    return {"PATH": f"{path_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}", "LANG": "C.UTF-8"}


def check_config_argv(args):
    """What --check-config runs for a container's psflow arguments: a server
    task with its own flags (--bind...), a chief or evaluator as a server
    check of its TF_CONFIG."""
    if args and args[0] == "server":
        return list(args) + ["--check-config"]
    return ["server", "--check-config"]


def expected_check_line(role, index, counts, listen):
    jobs = ", ".join(f"{job}: {n}" for job, n in sorted(counts.items()))
    head = f"TF_CONFIG ok: this task is {role}:{index} of {{{jobs}}}; "
    if role == "chief":
        return head + ("it is the coordinator: run it with `psflow train`, which listens on "
                       "no port")
    return head + f"it would listen on {listen} (the bind address given)"


class ManifestFilesTest(unittest.TestCase):
    def test_every_document_parses_and_names_itself(self):
        files = manifest_files()
        self.assertIn(os.path.join(KUBERNETES, "tfjob.yaml"), files)
        self.assertTrue(any(f.startswith(PLAIN + os.sep) for f in files))
        seen = set()
        for path in files:
            docs = load_documents(path)
            self.assertTrue(docs, f"{path} holds no document")
            for doc in docs:
                where = f"{os.path.relpath(path, SOURCE_DIR)}: {doc.get('kind')}"
                self.assertIsInstance(doc.get("apiVersion"), str, where)
                self.assertIsInstance(doc.get("kind"), str, where)
                name = doc.get("metadata", {}).get("name")
                self.assertIsInstance(name, str, where)
                self.assertRegex(name, DNS_LABEL, where)
                self.assertLessEqual(len(name), 63, where)
                self.assertNotIn((doc["kind"], name), seen, f"{where} {name} is defined twice")
                seen.add((doc["kind"], name))

    def test_known_kinds_have_their_api_versions(self):
        versions = {"TFJob": "kubeflow.org/v1", "StatefulSet": "apps/v1", "Job": "batch/v1",
                    "Service": "v1", "ConfigMap": "v1", "PersistentVolumeClaim": "v1"}
        for path, doc in all_documents():
            self.assertIn(doc["kind"], versions, path)
            self.assertEqual(doc["apiVersion"], versions[doc["kind"]], path)

    def test_the_role_services_exist_in_the_protocol(self):
        services = set()
        for name in os.listdir(os.path.join(SOURCE_DIR, "proto", "psflow", "v1")):
            with open(os.path.join(SOURCE_DIR, "proto", "psflow", "v1", name),
                      encoding="utf-8") as f:
                text = f.read()
            package = re.search(r"^package\s+([\w.]+);", text, re.M).group(1)
            services.update(f"{package}.{s}" for s in re.findall(r"^service\s+(\w+)", text, re.M))
        for service in ROLE_SERVICE.values():
            self.assertIn(service, services)


class PodTemplateTest(unittest.TestCase):
    """Every pod of every workload: image, command, resources, probes."""

    def setUp(self):
        self.docs = all_documents()
        self.uid = containerfile_uid()
        self.claims = {d["metadata"]["name"] for _, d in self.docs
                       if d["kind"] == "PersistentVolumeClaim"}
        self.config_maps = {d["metadata"]["name"] for _, d in self.docs if d["kind"] == "ConfigMap"}
        self.templates = [(path, *t) for path, doc in self.docs for t in pod_templates(doc)]
        self.assertGreaterEqual(len(self.templates), 6)

    def test_pods_are_complete(self):
        for path, role, replicas, template, doc in self.templates:
            where = f"{os.path.relpath(path, SOURCE_DIR)} {doc['metadata']['name']} {role}"
            with self.subTest(where):
                spec = template["spec"]
                self.assertLessEqual(set(spec), POD_SPEC_KEYS, where)
                self.assertIsInstance(replicas, int)
                self.assertGreater(replicas, 0)
                grace = spec.get("terminationGracePeriodSeconds")
                self.assertIsInstance(grace, int, f"{where}: terminationGracePeriodSeconds")
                self.assertGreater(grace, 2, "longer than psflow server's 2 s shutdown")
                security = spec.get("securityContext", {})
                self.assertTrue(security.get("runAsNonRoot"), where)
                self.assertEqual(security.get("runAsUser"), self.uid,
                                 f"{where}: runAsUser is not the Containerfile's USER")
                volumes = {v["name"]: v for v in spec.get("volumes", [])}
                for volume in volumes.values():
                    if "persistentVolumeClaim" in volume:
                        self.assertIn(volume["persistentVolumeClaim"]["claimName"], self.claims)
                    if "configMap" in volume:
                        self.assertIn(volume["configMap"]["name"], self.config_maps)
                for container in spec["containers"]:
                    self.assertLessEqual(set(container), CONTAINER_KEYS, where)
                    self.assertTrue(container.get("image"), f"{where}: no image")
                    command = container.get("command")
                    self.assertTrue(command and all(isinstance(c, str) for c in command), where)
                    self.assertTrue(all(isinstance(a, str) for a in container.get("args", [])))
                    for kind in ("requests", "limits"):
                        self.assertLessEqual({"cpu", "memory"},
                                             set(container.get("resources", {}).get(kind, {})),
                                             f"{where}: resources.{kind}")
                    for mount in container.get("volumeMounts", []):
                        self.assertIn(mount["name"], volumes, where)
                    for item in container.get("env", []):
                        if "valueFrom" in item:
                            self.assertIn(item["valueFrom"]["fieldRef"]["fieldPath"], FIELD_REFS)

    def test_tasks_are_probed_over_tcp_on_the_port_they_listen_on(self):
        for path, role, _, template, doc in self.templates:
            container = main_container(template, doc)
            where = f"{os.path.relpath(path, SOURCE_DIR)} {doc['metadata']['name']} {role}"
            with self.subTest(where):
                args = container.get("args", [])
                ports = {p["containerPort"] for p in container.get("ports", [])}
                if role == "chief":
                    # `psflow train` serves nothing: a probe would fail it.
                    self.assertNotIn("server", args)
                    self.assertNotIn("readinessProbe", container)
                    self.assertNotIn("livenessProbe", container)
                    continue
                self.assertEqual(args[0], "server", where)
                self.assertEqual(bind_port(args), PORT, f"{where}: --bind=...:{PORT}")
                self.assertIn(PORT, ports, where)
                for probe_name in ("readinessProbe", "livenessProbe"):
                    probe = container.get(probe_name)
                    self.assertIsNotNone(probe, f"{where}: no {probe_name}")
                    self.assertLessEqual(set(probe), PROBE_KEYS, where)
                    # kubelet's gRPC probe presents no client certificate, and
                    # the tasks require one (mutual TLS): a TCP probe.
                    self.assertNotIn("grpc", probe, f"{where}: {probe_name} cannot pass mTLS")
                    self.assertIn("tcpSocket", probe, f"{where}: {probe_name} is not a TCP probe")
                    self.assertEqual(probe["tcpSocket"]["port"], PORT, where)

    def test_every_pod_has_its_tls_credentials_from_a_secret(self):
        for path, role, _, template, doc in self.templates:
            container = main_container(template, doc)
            where = f"{os.path.relpath(path, SOURCE_DIR)} {doc['metadata']['name']} {role}"
            with self.subTest(where):
                env = {e["name"]: e.get("value") for e in container.get("env", [])}
                tls_dir = env.get("PSFLOW_TLS_DIR")
                self.assertTrue(tls_dir, f"{where}: no PSFLOW_TLS_DIR")
                mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
                self.assertIn(tls_dir, mounts, f"{where}: PSFLOW_TLS_DIR is not a mount")
                self.assertTrue(mounts[tls_dir].get("readOnly"), where)
                volumes = {v["name"]: v for v in template["spec"].get("volumes", [])}
                volume = volumes[mounts[tls_dir]["name"]]
                self.assertIn("secret", volume, f"{where}: the credentials are not a Secret")
                # Owner and group (the pod's fsGroup) only.
                self.assertEqual(volume["secret"].get("defaultMode", 0o644) & 0o007, 0, where)
                self.assertEqual(template["spec"]["securityContext"].get("fsGroup"),
                                 template["spec"]["securityContext"].get("runAsGroup"), where)


class TFJobTest(unittest.TestCase):
    def setUp(self):
        docs = load_documents(os.path.join(KUBERNETES, "tfjob.yaml"))
        jobs = [d for d in docs if d["kind"] == "TFJob"]
        self.assertEqual(len(jobs), 1)
        self.job = jobs[0]
        self.specs = self.job["spec"]["tfReplicaSpecs"]

    def test_replicas_follow_the_operators_rules(self):
        self.assertEqual(self.job["apiVersion"], "kubeflow.org/v1")
        self.assertLessEqual(set(self.specs), {"Chief", "Master", "PS", "Worker", "Evaluator"})
        self.assertEqual(self.specs["Chief"]["replicas"], 1)
        self.assertEqual(self.specs["PS"]["replicas"], 2)
        self.assertEqual(self.specs["Worker"]["replicas"], 2)
        self.assertIn(self.job["spec"].get("runPolicy", {}).get("cleanPodPolicy", "Running"),
                      ("Running", "All", "None"))
        for rtype, spec in self.specs.items():
            with self.subTest(rtype):
                self.assertIn(spec.get("restartPolicy"),
                              ("Always", "OnFailure", "Never", "ExitCode"))
                containers = spec["template"]["spec"]["containers"]
                named = [c for c in containers if c["name"] == TFJOB_CONTAINER]
                self.assertEqual(len(named), 1, f"{rtype}: one container named tensorflow")
                ports = {p.get("name"): p["containerPort"] for p in named[0].get("ports", [])}
                self.assertEqual(ports.get(TFJOB_PORT_NAME), PORT, rtype)

    def test_the_operators_tf_config_is_accepted_for_every_replica(self):
        namespace = self.job["metadata"].get("namespace", "default")
        name = self.job["metadata"]["name"]
        # genClusterSpec: every replica type but the evaluator, lower-cased,
        # as <job>-<type>-<index>.<namespace>.svc:<tfjob-port>.
        hosts = {rtype.lower(): [f"{name}-{rtype.lower()}-{i}.{namespace}.svc"
                                 for i in range(spec["replicas"])]
                 for rtype, spec in self.specs.items() if rtype != "Evaluator"}
        counts = {role: len(h) for role, h in hosts.items()}
        pod = 0
        for rtype, spec in self.specs.items():
            role = rtype.lower()
            container = main_container(spec["template"], self.job)
            for index in range(spec["replicas"]):
                pod += 1
                pod_ip = f"127.0.0.{10 + pod}"
                pod_name = f"{name}-{role}-{index}"
                with self.subTest(f"{role}:{index}"):
                    env = base_environment("/nonexistent")
                    env.update(pod_environment(container, namespace, pod_name, pod_ip))
                    drop_tls_dir(env)
                    env["TF_CONFIG"] = synthesize_tf_config(hosts, role, index)
                    self.assertEqual(container["command"], ["psflow"])
                    args = [expand(a, env) for a in container.get("args", [])]
                    result = run([PSFLOW] + check_config_argv(args), env)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    self.assertEqual(result.stdout.strip(), expected_check_line(
                        role, index, counts, f"{pod_ip}:{PORT}"))


class PlainKubernetesTest(unittest.TestCase):
    def setUp(self):
        docs = [d for path in manifest_files() if path.startswith(PLAIN + os.sep)
                for d in load_documents(path)]
        services = [d for d in docs if d["kind"] == "Service"]
        self.assertEqual(len(services), 1)
        self.service = services[0]
        self.workloads = [d for d in docs if d["kind"] in ("StatefulSet", "Job")]
        config_maps = [d for d in docs if d["kind"] == "ConfigMap"]
        self.assertEqual(len(config_maps), 1)
        self.entry_script = config_maps[0]["data"]["entry.sh"]
        self.namespace = "default"
        self.tmp = tempfile.mkdtemp(prefix="psflow-deploy-test-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.script = os.path.join(self.tmp, "entry.sh")
        with open(self.script, "w", encoding="utf-8") as f:
            f.write(self.entry_script)
        # A psflow that prints the TF_CONFIG it was given, and the real one.
        self.fake_bin = os.path.join(self.tmp, "fake")
        self.real_bin = os.path.join(self.tmp, "real")
        os.makedirs(self.fake_bin)
        os.makedirs(self.real_bin)
        with open(os.path.join(self.fake_bin, "psflow"), "w", encoding="utf-8") as f:
            f.write('#!/bin/sh\nprintf \'%s\\n\' "$TF_CONFIG"\n')
        os.chmod(os.path.join(self.fake_bin, "psflow"), 0o755)
        os.symlink(PSFLOW, os.path.join(self.real_bin, "psflow"))

    def role_of(self, workload):
        return workload["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]

    def by_role(self):
        return {self.role_of(w): w for w in self.workloads}

    def pods(self):
        """(workload, role, index, pod name, DNS name) of every pod Kubernetes
        would create, with the DNS names Kubernetes gives them."""
        service = self.service["metadata"]["name"]
        for w in self.workloads:
            name = w["metadata"]["name"]
            if w["kind"] == "StatefulSet":
                count = w["spec"]["replicas"]
                domain = w["spec"]["serviceName"]
            else:
                count = w["spec"]["completions"]
                domain = w["spec"]["template"]["spec"]["subdomain"]
            self.assertEqual(domain, service, name)
            for index in range(count):
                pod = f"{name}-{index}"
                yield w, self.role_of(w), index, pod, f"{pod}.{domain}.{self.namespace}.svc"

    def pod_env(self, workload, index, pod, pod_ip, bin_dir):
        container = workload["spec"]["template"]["spec"]["containers"][0]
        env = base_environment(bin_dir)
        env["HOSTNAME"] = pod
        if workload["kind"] == "Job":
            env["JOB_COMPLETION_INDEX"] = str(index)
        env.update(pod_environment(container, self.namespace, pod, pod_ip))
        return container, drop_tls_dir(env)

    def test_workloads_agree_with_the_service_and_each_other(self):
        self.assertEqual(self.service["spec"].get("clusterIP"), "None", "a headless Service")
        self.assertTrue(self.service["spec"].get("publishNotReadyAddresses"))
        self.assertIn(PORT, [p["port"] for p in self.service["spec"]["ports"]])
        selector = self.service["spec"]["selector"]
        roles = self.by_role()
        self.assertEqual(set(roles), {"chief", "ps", "worker"})
        for w in self.workloads:
            name = w["metadata"]["name"]
            labels = w["spec"]["template"]["metadata"]["labels"]
            self.assertLessEqual(selector.items(), labels.items(), f"{name}: not selected")
            container = w["spec"]["template"]["spec"]["containers"][0]
            env = {e["name"]: e.get("value") for e in container.get("env", [])}
            self.assertEqual(f"{env['PSFLOW_NAME']}-{env['PSFLOW_ROLE']}", name)
            self.assertEqual(env["PSFLOW_ROLE"], self.role_of(w))
            self.assertEqual(env.get("PSFLOW_SERVICE", env["PSFLOW_NAME"]),
                             self.service["metadata"]["name"])
            self.assertEqual(int(env.get("PSFLOW_PORT", PORT)), PORT)
            self.assertEqual(int(env["PSFLOW_NUM_PS"]), roles["ps"]["spec"]["replicas"], name)
            self.assertEqual(int(env["PSFLOW_NUM_WORKERS"]), roles["worker"]["spec"]["replicas"],
                             name)
            self.assertEqual(container["command"][:2], ["/bin/sh", "/etc/psflow/entry.sh"])
            if w["kind"] == "StatefulSet":
                self.assertLessEqual(w["spec"]["selector"]["matchLabels"].items(), labels.items())
                self.assertEqual(w["spec"].get("podManagementPolicy"), "Parallel")
            else:
                self.assertEqual(w["spec"]["completionMode"], "Indexed")
                self.assertEqual(w["spec"]["completions"], 1)
                self.assertEqual(w["spec"]["parallelism"], 1)
                self.assertIn(w["spec"]["template"]["spec"]["restartPolicy"],
                              ("OnFailure", "Never"))

    def test_the_entry_script_is_posix_sh(self):
        result = run(["sh", "-n", self.script], base_environment(self.fake_bin))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(self.entry_script.startswith("#!/bin/sh\n"))

    def test_the_entry_script_writes_the_operators_tf_config_for_every_pod(self):
        hosts = {}
        for _, role, _, _, dns in self.pods():
            hosts.setdefault(role, []).append(dns)
        for n, (w, role, index, pod, _) in enumerate(self.pods()):
            with self.subTest(pod):
                _, env = self.pod_env(w, index, pod, f"127.0.0.{20 + n}", self.fake_bin)
                result = run(["sh", self.script], env)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stdout.strip(), synthesize_tf_config(hosts, role, index))

    def test_every_pods_tf_config_passes_check_config(self):
        counts = {}
        for _, role, _, _, _ in self.pods():
            counts[role] = counts.get(role, 0) + 1
        for n, (w, role, index, pod, _) in enumerate(self.pods()):
            with self.subTest(pod):
                pod_ip = f"127.0.0.{20 + n}"
                container, env = self.pod_env(w, index, pod, pod_ip, self.real_bin)
                args = [expand(a, env) for a in container.get("args", [])]
                # The names do not resolve here; --bind (from the manifest)
                # spares resolving them, and the structure is still checked.
                result = run(["sh", self.script] + check_config_argv(args), env)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stdout.strip(),
                                 expected_check_line(role, index, counts, f"{pod_ip}:{PORT}"))

    def test_the_entry_script_refuses_a_pod_it_cannot_name(self):
        w = self.by_role()["ps"]
        for hostname, message in (("psflow-ps", "cannot tell this pod's index"),
                                  ("other-ps-1", "name its StatefulSet or Job 'psflow-ps'")):
            with self.subTest(hostname):
                _, env = self.pod_env(w, 1, hostname, "127.0.0.30", self.fake_bin)
                result = run(["sh", self.script], env)
                self.assertEqual(result.returncode, 2)
                self.assertIn(message, result.stderr)
                self.assertEqual(result.stdout, "")

    def test_a_tf_config_with_too_few_workers_fails_check_config(self):
        w = self.by_role()["ps"]
        _, env = self.pod_env(w, 0, "psflow-ps-0", "127.0.0.31", self.real_bin)
        env["PSFLOW_NUM_WORKERS"] = "0"
        result = run(["sh", self.script, "server", "--check-config", "--bind=127.0.0.31:2222"],
                     env)
        self.assertEqual(result.returncode, 2)
        self.assertIn("There must be at least one worker", result.stderr)


class ContainerfileTest(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(DEPLOY, "Containerfile"), encoding="utf-8") as f:
            self.text = f.read()

    def test_builds_on_bookworm_with_the_projects_packages_and_runs_as_non_root(self):
        images = re.findall(r"^ARG\s+\w+_IMAGE=(\S+)", self.text, re.M)
        self.assertEqual(images, ["debian:bookworm", "debian:bookworm-slim"])
        self.assertEqual(len(re.findall(r"^FROM\s", self.text, re.M)), 2)
        self.assertIn("bash scripts/install-deps.sh", self.text)
        self.assertIn("sh deploy/runtime-packages.sh /build/psflow", self.text)
        self.assertRegex(self.text, r"(?m)^COPY --from=build /build/psflow /usr/local/bin/psflow$")
        self.assertRegex(self.text, r'(?m)^ENTRYPOINT \["psflow"\]$')
        uid = containerfile_uid()
        self.assertIsNotNone(uid)
        self.assertNotEqual(uid, 0)
        self.assertIn(f"--uid {uid}", self.text)

    def test_the_runtime_packages_of_psflow_are_debian_runtime_libraries(self):
        result = run(["sh", os.path.join(DEPLOY, "runtime-packages.sh"), PSFLOW],
                     base_environment("/nonexistent"))
        self.assertEqual(result.returncode, 0, result.stderr)
        packages = result.stdout.split()
        for expected in ("libc6", "libstdc++6", "libprotobuf32"):
            self.assertIn(expected, packages)
        self.assertTrue(any(p.startswith("libgrpc++") for p in packages), packages)
        for package in packages:
            self.assertFalse(package.endswith("-dev"), package)
            status = run(["dpkg-query", "-W", "-f=${Status}", package],
                         base_environment("/nonexistent"))
            self.assertIn("install ok installed", status.stdout, package)


def main():
    global PSFLOW
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--psflow", required=True, help="the psflow binary under test")
    args, rest = parser.parse_known_args()
    PSFLOW = os.path.abspath(args.psflow)
    if not os.access(PSFLOW, os.X_OK):
        sys.exit(f"manifests_test: {PSFLOW} is not an executable; build psflow first")
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
