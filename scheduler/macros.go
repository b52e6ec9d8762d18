package scheduler

// This file defines macro substitution in args, env values and metadata values.

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The macros, substituted in a role's args, env values and metadata values for each replica.
//
//	${app_id}        the app id, which is also the Volcano Job's name
//	${replica_id}    the replica's index within its role, from 0
//	${num_replicas}  the number of replicas of the role
//	${rank0_env}     a Kubernetes variable reference $(NAME) to the host name of replica 0 of the
//	                 first role: on that pod NAME is STARPOD_RANK0_HOST (set to localhost), on the
//	                 others it is VC_<ROLE>_0_HOSTS, which Volcano's svc plugin provides.
//
// Substitution is TorchX's (Python's string.Template.safe_substitute): $name works as ${name};
// $$ stands for $; any other ${...} or $name, such as Hydra's ${oc.env:HOME}, and any other $
// (Kubernetes' own $(VAR) references) are kept as they are.
//
// Unlike TorchX, whose ${rank0_env} is the bare variable name meant for a shell, this one is
// a $(NAME) reference that the kubelet expands in command and args without a shell. It is an
// error in env and metadata values: the kubelet would not expand it there (Volcano appends
// its variables after the role's env), so the pods would see the text $(NAME).
var macroNames = []string{"app_id", "replica_id", "num_replicas", "rank0_env"}

// Rank0HostEnv is the variable that holds "localhost" in the pod of replica 0 of the first
// role, so that ${rank0_env} works there too.
const Rank0HostEnv = "STARPOD_RANK0_HOST"

// macroValues holds the values of the macros for one replica.
type macroValues map[string]string

// expand substitutes the macros in s.
func (m macroValues) expand(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	scanMacros(s, func(text, name string) bool {
		if name != "" {
			b.WriteString(m[name])
		} else {
			b.WriteString(text)
		}
		return true
	})
	return b.String()
}

// scanMacros splits s into literal text and macros, in order, as TorchX's substitution does,
// and calls fn with each: fn(text, "") for text to keep as it is, fn("", name) for the macro
// name. It stops when fn returns false.
func scanMacros(s string, fn func(text, name string) bool) {
	for s != "" {
		i := strings.IndexByte(s, '$')
		if i < 0 || i == len(s)-1 {
			fn(s, "")
			return
		}
		if i > 0 && !fn(s[:i], "") {
			return
		}
		rest := s[i+1:]
		switch {
		case rest[0] == '$': // $$ stands for $
			if !fn("$", "") {
				return
			}
			s = rest[1:]
			continue
		case rest[0] == '{':
			n := identLen(rest[1:])
			if n > 0 && n+1 < len(rest) && rest[n+1] == '}' && isMacro(rest[1:n+1]) {
				if !fn("", rest[1:n+1]) {
					return
				}
				s = rest[n+2:]
				continue
			}
		default:
			if n := identLen(rest); n > 0 && isMacro(rest[:n]) {
				if !fn("", rest[:n]) {
					return
				}
				s = rest[n:]
				continue
			}
		}
		// Not a macro: the $ is kept, and what follows is read on.
		if !fn("$", "") {
			return
		}
		s = rest
	}
}

// identLen returns the length of the Python identifier ([_a-zA-Z][_a-zA-Z0-9]*) s begins
// with, 0 if none.
func identLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return i
	}
	return len(s)
}

// checkMacros reports ${rank0_env} outside args, where the kubelet does not expand the $(VAR)
// it stands for.
func checkMacros(s string, p *field.Path, inArgs bool) field.ErrorList {
	if inArgs || !strings.Contains(s, "rank0_env") {
		return nil
	}
	var errs field.ErrorList
	scanMacros(s, func(_, name string) bool {
		if name == "rank0_env" {
			errs = append(errs, field.Invalid(p, s,
				"${rank0_env} works only in args, where the kubelet expands the $(VAR) it stands for"))
			return false
		}
		return true
	})
	return errs
}

func isMacro(name string) bool {
	for _, m := range macroNames {
		if m == name {
			return true
		}
	}
	return false
}
