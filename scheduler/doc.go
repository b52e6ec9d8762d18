// Package scheduler turns apps of roles into Volcano Jobs, with the semantics of TorchX's
// Kubernetes scheduler and starpod's overlays, or into JobSets (see below).
//
// An app spec is a YAML file (see [App], [Role], [Resource], [Mount]); to read one, use
// [LoadApp] or [ParseApp]. They decode strictly — unknown keys (with a did-you-mean hint),
// duplicate keys and values of the wrong type are errors — validate the result, and report
// every problem at once as a *[SpecError], one line each:
//
//	app.yaml:12:15: roles[0].resource.mem_mb: must be > 0
//
// To turn an app into a Volcano Job (volcano.sh/apis batch/v1alpha1), use [Build] with a
// [Config] (the run options, listed with their defaults in [ConfigOptions]; parse --cfg
// settings with [ParseConfig]) and [BuildOptions]. For each role and replica, Build
//
//  1. builds the replica's pod from the role, with the bookkeeping labels of step 3: one container named after the task
//     (<role>-<replica>), command [entrypoint] + args, env ("[FIELD_PATH]x" becomes a
//     fieldRef), CPU, memory, GPU and device requests and limits, the instance-type node
//     selector, a memory-backed /dev/shm, the mounts, the ports, restartPolicy Never, and
//     the macros ${app_id}, ${replica_id}, ${num_replicas} and ${rank0_env} substituted in
//     args, env and metadata;
//  2. applies the app's overlays, then the role's, then BuildOptions.Overlays, each compiled
//     once, with ctx = {app_id, role, replica_id, num_replicas, scheduler: "kubernetes",
//     args};
//  3. sets the bookkeeping labels (app.kubernetes.io/{name,instance,managed-by} and
//     starpod.dev/{app-name,role-name,role-index,replica-id}) again. The pod has them before
//     the overlays too, so that an overlay can use them (in an affinity selector, say), but
//     they are set again after the overlays, so an overlay cannot change or remove them:
//     whatever it writes there is replaced;
//  4. checks the pod (see below).
//
// Each replica is one task of one pod, so that elastic roles (min_replicas) and per-replica
// retries (retry_policy REPLICA) can be expressed. The job's name is the app id; every
// generated name is checked against Kubernetes' length and character rules.
//
// Names are never cut where no one sees it. The app name, normalised (lower case, '_', '.'
// and spaces to '-', other characters dropped), is the value of the app.kubernetes.io/name
// and starpod.dev/app-name labels, so a spec whose normalised name is longer than 63
// characters is refused, as a problem of its name field, rather than labelled with a cut
// name that no longer matches it. A generated app id is the normalised name cut to leave
// room for its random suffix and the task names in the pod names, which the handle that
// "starpod run" prints shows; a given app id (BuildOptions.AppID) that does not fit is
// refused. Build reports
// every problem of every role and replica as one *[BuildError]: the spec's, the run options'
// and the app id's, and every overlay's that cannot be read or compiled, all together (every
// overlay the spec names is compiled even if the spec has problems); then, if the spec and
// every overlay are fine, the problems of every replica.
//
// # What a dry run checks
//
// "starpod run --dry-run" (Build and [Render]) checks offline, without a cluster:
//
//   - the spec: strict decoding, types, required fields, enumerations, counts and sizes,
//     names (role names, env var names, port names and numbers, label keys and values
//     without macros, annotation keys, resource names, claim names), paths, macros, and
//     resource values (cpu at least 0.001, one millicore; nvidia.com/gpu only as gpu, not
//     in devices);
//   - the run options and the app id, which must leave room for every pod name;
//   - every overlay's result, by the engine: the pod decodes strictly as a corev1.Pod;
//   - every pod, after the overlays, for what the API server would reject: pod and container
//     names, label keys and values, annotation keys, volume names and the volumes that mounts
//     name, an image for every container, restartPolicy, dnsPolicy, imagePullPolicy and port
//     protocol against the values k8s.io/api/core/v1 defines (empty is left to be defaulted),
//     containerPort 1 to 65535 and hostPort 0 to 65535, port names given twice in a
//     container, env entries with both value and valueFrom, requests above limits, and
//     requests of a resource that cannot be overcommitted (a device, hugepages) that differ
//     from its limit or have none; and that the pod sets no name or namespace, which are
//     Volcano's and the job's.
//
// These are the checks that matter most, not all of the API server's validation of a pod;
// quotas, admission webhooks and the rest of the pod's fields are checked only by a cluster.
// "starpod run --dry-run=server" adds the API server's own validation: it sends the job in
// dry-run mode, the server checks it against the Job's schema and runs the admission
// webhooks (Volcano's among them), and nothing is persisted. The pods themselves are
// validated in full only when Volcano creates them.
//
// # Limits
//
// An app spec may be hostile: the process that reads it must not crash, hang or grow without
// bound. So:
//
//   - a spec file is read only if it is a regular file of at most [MaxSpecFile] bytes
//     (LoadApp returns a *bound.TypeError or a *bound.SizeError otherwise), and ParseApp
//     refuses larger data;
//   - YAML aliases may add at most [AliasFactor] times the values written in the spec, within
//     [MinAliasValues] and [MaxAliasValues]: the values an alias stands for count each time it
//     is used, so that a billion laughs stops at the alias that passes the limit, with its
//     position and field path;
//   - a job has at most [MaxTasks] tasks (replicas of all roles together), and its JSON, after
//     macro expansion and overlays, at most [MaxJobBytes], what the API server accepts. Build
//     computes the size the spec gives the job from a few pods of each role, before it builds
//     any replica, and reports a job too large as a problem of the spec, with the field that
//     makes it so; it adds up the size of each task as it builds it, and stops, with a
//     *[JobSizeError], once the overlays have made the job too large;
//   - the overlay files a spec names are relative to its directory, and must be inside the
//     overlay root (the spec's directory, or BuildOptions.OverlayRoot): absolute paths, ../
//     paths out of it and symbolic links that lead out are problems of the spec; and they are
//     read only if they are regular files of at most bound.MaxScript bytes.
//
// To print a job as a user would write it (sorted keys, no nulls), use [Marshal]. To read
// the app back from a job in the cluster, use [AppFromJob].
//
// # JobSets
//
// To turn an app into a JobSet (sigs.k8s.io/jobset jobset.x-k8s.io/v1alpha2) instead, for
// clusters that run JobSet and Kueue rather than Volcano, use [BuildJobSet] with the run
// options of [SchedulerJobSet] ([JobSetConfigOptions], [ParseConfigFor]); print it with
// [MarshalJobSet] and read the app back with [AppFromJobSet]. Each role is one indexed Job
// whose pod template serves every replica: the overlays run once per role with ctx.replica_id
// [TemplateReplicaID], and a replica reads its index ([ReplicaIDEnv], its completion index)
// and rank 0's host ([Rank0Host]) at run time. BuildJobSet checks what Build checks, refuses
// elastic roles and ${replica_id} in pod metadata, and maps max_retries and retry_policy onto
// the Jobs' backoff limits and the JobSet's failure policy; docs/jobset.md has the details.
//
// Differences from TorchX, on purpose: ${rank0_env} is a $(NAME) reference that works without
// a shell; retry_policy ROLE is rejected instead of failing with a KeyError; CPU millicores
// are rounded, not truncated; unknown capabilities are rejected instead of ignored; role
// names must be DNS labels instead of being silently rewritten; the scheduler name is a run
// option.
package scheduler
