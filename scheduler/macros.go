package scheduler

// This file defines macro substitution in args, env values and metadata values.

import (
	"fmt"
	"github.com/starpod/starpod/internal/yamlfile"
	"strings"

	"github.com/starpod/starpod/internal/spell"
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
// $${ stands for a literal ${. Any other ${name} is an error; any other $ is kept, so
// Kubernetes' own $(VAR) references work as usual.
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

// expand substitutes the macros in s. s has been checked by checkMacros.
func (m macroValues) expand(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		if i > 0 && s[i-1] == '$' {
			b.WriteString(s[:i-1]) // $${ stands for ${
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		name := s[i+2 : i+end]
		b.WriteString(m[name])
		s = s[i+end+1:]
	}
	b.WriteString(s)
	return b.String()
}

// maxMacroErrors bounds the problems checkMacros reports of one string: each quotes the
// string, which may be long.
const maxMacroErrors = 3

// checkMacros reports the unknown or unterminated macros in s, and ${rank0_env} outside args,
// each unknown name once and at most maxMacroErrors problems.
func checkMacros(s string, p *field.Path, inArgs bool) field.ErrorList {
	var errs field.ErrorList
	var seen map[string]bool // the unknown names reported
	for rest := s; len(errs) < maxMacroErrors; {
		i := strings.Index(rest, "${")
		if i < 0 {
			break
		}
		if i > 0 && rest[i-1] == '$' {
			rest = rest[i+2:]
			continue
		}
		end := strings.IndexByte(rest[i:], '}')
		if end < 0 {
			errs = append(errs, field.Invalid(p, s, "unterminated ${ (write $${ for a literal ${)"))
			break
		}
		name := rest[i+2 : i+end]
		if name == "rank0_env" && !inArgs && !seen[name] {
			errs = append(errs, field.Invalid(p, s,
				"${rank0_env} works only in args, where the kubelet expands the $(VAR) it stands for"))
			if seen == nil {
				seen = make(map[string]bool)
			}
			seen[name] = true
		}
		if !isMacro(name) && !seen[name] {
			if seen == nil {
				seen = make(map[string]bool)
			}
			seen[name] = true
			detail := fmt.Sprintf("unknown macro ${%s}", yamlfile.Shorten(name))
			if near := spell.Nearest(name, macroNames); near != "" {
				detail += fmt.Sprintf("; did you mean ${%s}?", near)
			} else {
				detail += fmt.Sprintf("; want one of ${%s} (write $${ for a literal ${)", strings.Join(macroNames, "}, ${"))
			}
			errs = append(errs, field.Invalid(p, s, detail))
		}
		rest = rest[i+end+1:]
	}
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
