// `psflow certs`: a cluster's CA and one certificate per task, for mutual TLS.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "cli/cluster_flags.h"
#include "cli/commands.h"
#include "psflow/cluster_resolver.h"
#include "security/cluster_certificates.h"

namespace psflow::internal {
namespace {

// Thread-safety: a value type.
struct CertsFlags {
  std::string tf_config;
  std::string cluster_spec;
  std::string out;
  bool force = false;
  int validity_days = 3650;
  bool loopback_names = false;
  ClusterResolverFlags cluster_resolver;
};

constexpr CommandHelp kCertsHelp = {"certs",
                                    "Create a cluster's CA and one TLS certificate per task",
                                    R"(Writes into --out (created 0700 when new), every file 0600:
  ca.crt, ca.key                   a new certificate authority (EC P-256)
  <job>-<index>.crt, .key          each task's certificate and key
for every task of the cluster (chief and evaluator included). A task's
certificate names it (Subject CN "<job>/<index>", e.g. "ps/1") and its address
(an IP or DNS subject alternative name; loopback addresses also get localhost,
127.0.0.1 and ::1), and serves as both server and client certificate. Give
each task ca.crt and its own pair (psflow server/train/eval --tls-dir DIR picks
its own files by job and index); keep ca.key off the tasks: it makes new
identities. The cluster comes from --tf-config (a TF_CONFIG value), from
--cluster-spec (its "cluster" object), from the TF_CONFIG environment
variable, or with --cluster-resolver slurm from the Slurm allocation as the
tasks will see it (run it in the batch script, before srun; see
deploy/slurm/). Existing files are not replaced unless --force; nothing is written
when one exists. Prints each file written.

Example:
  psflow certs --cluster-spec '{"chief": ["10.0.0.1:2222"], "ps": ["10.0.0.2:2222"],
                                "worker": ["10.0.0.3:2222"]}' --out certs/)"};

void add_certs_flags(CLI::App& app, CertsFlags& flags) {
  auto* tf_config = app.add_option("--tf-config", flags.tf_config,
                                   "A TF_CONFIG value whose \"cluster\" to certify (default: the "
                                   "TF_CONFIG environment variable)");
  auto* spec = app.add_option("--cluster-spec", flags.cluster_spec,
                              "The cluster as TF_CONFIG's \"cluster\" object, e.g. "
                              "'{\"ps\": [\"10.0.0.2:2222\"], \"worker\": [\"10.0.0.3:2222\"]}'");
  tf_config->excludes(spec);
  spec->excludes(tf_config);
  app.add_option("--out", flags.out, "Directory to write the files into")->required();
  app.add_flag("--force", flags.force,
               "Replace existing files (a new CA: every task needs its "
               "new files)");
  app.add_option("--validity-days", flags.validity_days,
                 "Days the CA and the certificates are valid")
      ->capture_default_str()
      ->check(CLI::Range(1, 36500));
  app.add_flag("--loopback-names", flags.loopback_names,
               "Certify every task for localhost, 127.0.0.1 and ::1 too, for clusters reached "
               "through local proxies or port forwards (kubectl port-forward, ssh -L)");
  add_cluster_resolver_flags(app, flags.cluster_resolver);
}

int usage_error(std::string_view message) {
  std::fprintf(stderr, "psflow certs: %.*s\n", static_cast<int>(message.size()), message.data());
  return kExitUsage;
}

absl::StatusOr<ClusterSpec> cluster_from_flags(const CertsFlags& flags, const CLI::App& app) {
  absl::StatusOr<std::optional<SlurmClusterResolver>> slurm =
      slurm_resolver_from_flags(flags.cluster_resolver, app);
  if (!slurm.ok()) return slurm.status();
  if (slurm->has_value()) {
    if (!flags.cluster_spec.empty() || !flags.tf_config.empty()) {
      return absl::InvalidArgumentError(
          "--cluster-resolver slurm does not combine with --tf-config or --cluster-spec: the "
          "cluster comes from the Slurm allocation; drop one");
    }
    absl::StatusOr<ClusterSpec> spec = (*slurm)->cluster_spec();
    if (!spec.ok())
      return absl::InvalidArgumentError(absl::StrCat("Slurm: ", spec.status().message()));
    return spec;
  }
  if (!flags.cluster_spec.empty()) {
    absl::StatusOr<ClusterSpec> spec = ClusterSpec::from_json(flags.cluster_spec);
    if (!spec.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--cluster-spec: ", spec.status().message()));
    }
    return spec;
  }
  TFConfigClusterResolver::Options options;
  if (!flags.tf_config.empty()) options.tf_config_json = flags.tf_config;
  TFConfigClusterResolver resolver(options);
  const char* source = flags.tf_config.empty() ? "TF_CONFIG" : "--tf-config";
  if (!resolver.is_configured()) {
    return absl::InvalidArgumentError(
        "no cluster: pass --tf-config JSON or --cluster-spec JSON, or set TF_CONFIG");
  }
  absl::StatusOr<ClusterSpec> spec = resolver.cluster_spec();
  if (!spec.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", spec.status().message()));
  }
  return spec;
}

int run_certs(const CertsFlags& flags, const CLI::App& app) {
  absl::StatusOr<ClusterSpec> spec = cluster_from_flags(flags, app);
  if (!spec.ok()) return usage_error(sv(spec.status().message()));
  if (spec->empty()) return usage_error("the cluster has no tasks; nothing to certify");
  absl::StatusOr<std::vector<CertifiedTask>> tasks = certified_tasks(*spec);
  if (!tasks.ok()) return usage_error(sv(tasks.status().message()));
  ClusterCertificatesOptions options;
  options.force = flags.force;
  options.ca_validity = absl::Hours(24) * flags.validity_days;
  options.task_validity = options.ca_validity;
  options.loopback_names = flags.loopback_names;
  absl::StatusOr<std::vector<std::string>> written =
      write_cluster_certificates(*tasks, flags.out, options);
  if (!written.ok()) {
    std::fprintf(stderr, "psflow certs: %s\n", std::string(written.status().message()).c_str());
    return absl::IsAlreadyExists(written.status()) ? kExitUsage : kExitFailure;
  }
  for (const std::string& path : *written) std::printf("wrote %s\n", path.c_str());
  std::printf(
      "%zu task certificates signed by %s/ca.crt; give each task ca.crt and its own "
      "<job>-<index>.crt/.key (--tls-dir), and keep ca.key elsewhere\n",
      tasks->size(), flags.out.c_str());
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

Command add_certs_command(CLI::App& parent) {
  return add_command(parent, kCertsHelp, add_certs_flags, run_certs);
}

}  // namespace psflow::internal
