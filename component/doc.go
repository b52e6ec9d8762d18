// Package component runs components: Starlark functions that return an app, the way TorchX's
// components (dist.ddp, utils.python, a user's my_component.py:trainer) return an AppDef.
//
// A component is named either by a builtin name, such as "dist.ddp" (the function ddp of the
// embedded file builtin/dist.star), or by "path/to/file.star:function". To find one, use
// [Load]; it runs the file's top level in the engine's sandbox (no I/O, deterministic, bounded
// in steps and time; load() confined to the file's directory, or the root the caller gives) and
// returns a [*Component] that describes the function's parameters and help. To turn command
// line arguments into a call, use [Component.ParseArgs], which gives a [*UsageError] for
// unknown flags and bad values; to call the function and get the app, use [Component.App],
// which converts the result, dicts and lists in the shape of an app spec, and decodes it
// strictly with scheduler.ParseApp, exactly as an APP.yaml file is decoded.
//
// # Flags from the signature
//
// Each parameter of the function is a flag, read as TorchX reads it: one-letter names take
// one dash (-j, -m, -h), longer names two (--script, --max_retries; --max-retries is accepted
// too). Its type is that of its default: int, float, bool (a switch, or --debug True/False,
// --debug=false), string, list (split at commas, items stripped; repeatable) and dict
// (KEY=VALUE pairs split at ',' or ';' only before a KEY=, as TorchX's to_dict: see
// [SplitDict]; repeatable). A parameter whose default is None, or that has no default, is a
// string unless its entry in the docstring's Args: section names a type, as in Google-style
// docstrings: "x1 (float): ...". A parameter without a default is required. *args takes
// the arguments after "--", and the first argument that is not a flag and all after it, as
// TorchX's argparse REMAINDER; the parameters before *args are then passed by position. The
// help of "COMPONENT --help" is the docstring's summary, its description, and each
// parameter's text from the Args: section. A component refuses arguments with
// usage_error(msg), which [Component.App] returns as a *UsageError.
//
// # What components see
//
// Components see the overlay helpers of package builtins and:
//
//	named_resources             a dict of the named resources (-h NAME): each a dict of cpu, gpu,
//	                            mem_mb, devices and capabilities, in the shape of an app's resource
//	named_resource(name)        named_resources[name], or an error with a did-you-mean
//	macros                      a struct of the app spec's macros: macros.app_id is "${app_id}",
//	                            and replica_id, num_replicas and rank0_env likewise
//	shlex.quote(s)              s quoted for a POSIX shell, as Python's shlex.quote
//	shlex.join(args)            the args quoted and joined with spaces, as Python's shlex.join
//	usage_error(msg)            stops the component with a usage error (exit 2, no traceback)
//
// The named resources are TorchX's generic ones (gpu.small, cpu.micro, ...) and its AWS
// instance table (aws_p4d.24xlarge, ...; see [NamedResources]), with the user's own added from
// the project config.
//
// # Project config
//
// A project config, .starpod.yaml in the working directory or the file $STARPOD_CONFIG names,
// holds default run options per scheduler, default component arguments, named resources and
// default overlays (see [Config] and [LoadConfig]). It is read as an app spec is, with
// internal/yamlfile: strictly, every problem with file:line:col and field path. Values on
// the command line win over the file, and the file over the builtin defaults.
//
// # Differences from TorchX
//
// Every difference from TorchX, each with its reason, is listed in one place: the
// "Differences from TorchX" section of docs/components.md. In short: the rendezvous endpoint
// is a $(VAR) reference the kubelet expands, LOGLEVEL defaults to WARNING, role names are
// DNS labels, a bool flag alone is a switch, dict values may hold '=', repeated list and
// dict flags add up, and the config's maps stay maps.
//
// # Where components run
//
// [Load] and [Component.Result] run the Starlark in the calling process, bounded in steps and
// time. starpod run and starpod components --dir call them in a component process limited to
// --max-memory, and pass the result's YAML back to [AppFromResult].
package component
