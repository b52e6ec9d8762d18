package integration

// This file defines the CustomResourceDefinitions the tests install: Volcano's
// jobs.batch.volcano.sh and commands.bus.volcano.sh, with OpenAPI schemas as strict as the
// Go types of volcano.sh/apis allow. The pod template of a task gets the full schema of
// core/v1 PodTemplateSpec, made from Kubernetes' own OpenAPI definitions.

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	generatedopenapi "k8s.io/kubernetes/pkg/generated/openapi"
	"sigs.k8s.io/yaml"
)

// jobCRD is Volcano's Job CRD. The schema of spec.tasks[].template is filled in from
// Kubernetes' definition of PodTemplateSpec.
const jobCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: jobs.batch.volcano.sh
spec:
  group: batch.volcano.sh
  scope: Namespaced
  names: {kind: Job, listKind: JobList, plural: jobs, singular: job, shortNames: [vcjob, vj]}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        required: [spec]
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            required: [tasks]
            properties:
              schedulerName: {type: string, minLength: 1}
              minAvailable: {type: integer, format: int32, minimum: 0}
              minSuccess: {type: integer, format: int32, minimum: 1}
              maxRetry: {type: integer, format: int32, minimum: 0}
              ttlSecondsAfterFinished: {type: integer, format: int32, minimum: 0}
              queue: {type: string, minLength: 1}
              priorityClassName: {type: string}
              runningEstimate: {type: string}
              plugins:
                type: object
                additionalProperties: {type: array, items: {type: string}}
              policies: {type: array, items: {$ref: policy}}
              networkTopology:
                type: object
                properties:
                  mode: {type: string, enum: [hard, soft]}
                  highestTierAllowed: {type: integer}
              volumes:
                type: array
                items:
                  type: object
                  required: [mountPath]
                  properties:
                    mountPath: {type: string, minLength: 1}
                    volumeClaimName: {type: string}
                    volumeClaim: {type: object, x-kubernetes-preserve-unknown-fields: true}
              tasks:
                type: array
                minItems: 1
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name, template]
                  properties:
                    name: {type: string, minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'}
                    replicas: {type: integer, format: int32, minimum: 0}
                    minAvailable: {type: integer, format: int32, minimum: 0}
                    maxRetry: {type: integer, format: int32, minimum: 0}
                    topologyPolicy: {type: string, enum: [none, best-effort, restricted, single-numa-node]}
                    policies: {type: array, items: {$ref: policy}}
                    dependsOn:
                      type: object
                      properties:
                        name: {type: array, items: {type: string}}
                        iteration: {type: string, enum: [any, all]}
                    template: {$ref: template}
          status:
            type: object
            properties:
              state:
                type: object
                properties:
                  phase: {$ref: phase}
                  reason: {type: string}
                  message: {type: string}
                  lastTransitionTime: {type: string, format: date-time}
              minAvailable: {type: integer, format: int32}
              taskStatusCount:
                type: object
                additionalProperties:
                  type: object
                  properties:
                    phase:
                      type: object
                      additionalProperties: {type: integer, format: int32}
              pending: {type: integer, format: int32}
              running: {type: integer, format: int32}
              succeeded: {type: integer, format: int32}
              failed: {type: integer, format: int32}
              terminating: {type: integer, format: int32}
              unknown: {type: integer, format: int32}
              version: {type: integer, format: int32}
              retryCount: {type: integer, format: int32}
              runningDuration: {type: string}
              controlledResources: {type: object, additionalProperties: {type: string}}
              conditions:
                type: array
                items:
                  type: object
                  required: [status]
                  properties:
                    status: {$ref: phase}
                    lastTransitionTime: {type: string, format: date-time}
`

// commandCRD is Volcano's Command CRD: a request to a controller, such as AbortJob.
const commandCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: commands.bus.volcano.sh
spec:
  group: bus.volcano.sh
  scope: Namespaced
  names: {kind: Command, listKind: CommandList, plural: commands, singular: command}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        required: [action, target]
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          action: {$ref: action}
          reason: {type: string}
          message: {type: string}
          target:
            type: object
            required: [apiVersion, kind, name, uid]
            properties:
              apiVersion: {type: string, minLength: 1}
              kind: {type: string, minLength: 1}
              name: {type: string, minLength: 1}
              uid: {type: string, minLength: 1}
              controller: {type: boolean}
              blockOwnerDeletion: {type: boolean}
`

// Schemas that the CRDs above name with $ref, which a CRD itself cannot hold.
const (
	actionSchema = `{type: string, enum: [AbortJob, RestartJob, RestartTask, RestartPod, TerminateJob, CompleteJob, ResumeJob]}`
	phaseSchema  = `{type: string, enum: [Pending, Aborting, Aborted, Running, Restarting, Completing, Completed, Terminating, Terminated, Failed]}`
	policySchema = `
type: object
properties:
  action: ` + actionSchema + `
  event: {$ref: event}
  events: {type: array, items: {$ref: event}}
  exitCode: {type: integer, format: int32}
  timeout: {type: string}
`
	eventSchema = `{type: string, enum: ['*', PodFailed, PodEvicted, PodPending, PodRunning, Unknown, TaskCompleted, OutOfSync, CommandIssued, JobUpdated, TaskFailed]}`
)

// installCRDs creates the CRDs and waits until the API server serves them.
func installCRDs(ctx context.Context, cfg *rest.Config) error {
	client, err := apiext.NewForConfig(cfg)
	if err != nil {
		return err
	}
	refs := map[string]apiextv1.JSONSchemaProps{}
	for name, text := range map[string]string{
		"action": actionSchema, "phase": phaseSchema, "event": eventSchema,
	} {
		var s apiextv1.JSONSchemaProps
		if err := yaml.UnmarshalStrict([]byte(text), &s); err != nil {
			return fmt.Errorf("schema %s: %v", name, err)
		}
		refs[name] = s
	}
	var policy apiextv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict([]byte(policySchema), &policy); err != nil {
		return fmt.Errorf("schema policy: %v", err)
	}
	refs["policy"] = resolveRefs(policy, refs)
	refs["template"] = podTemplateSchema()

	for _, text := range []string{jobCRD, commandCRD} {
		var crd apiextv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict([]byte(text), &crd); err != nil {
			return err
		}
		for i := range crd.Spec.Versions {
			s := resolveRefs(*crd.Spec.Versions[i].Schema.OpenAPIV3Schema, refs)
			crd.Spec.Versions[i].Schema.OpenAPIV3Schema = &s
		}
		if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s: %v", crd.Name, err)
		}
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextv1.NamesAccepted && c.Status == apiextv1.ConditionFalse {
					return false, fmt.Errorf("names not accepted: %s", c.Message)
				}
				if c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("%s not established: %v", crd.Name, err)
		}
	}
	// Established CRDs take a moment to be served; wait until a list succeeds.
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, err := vc.BatchV1alpha1().Jobs("default").List(ctx, metav1.ListOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, err
		}
		_, err := vc.BusV1alpha1().Commands("default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
}

// resolveRefs replaces each {$ref: name} in s by refs[name], recursively.
func resolveRefs(s apiextv1.JSONSchemaProps, refs map[string]apiextv1.JSONSchemaProps) apiextv1.JSONSchemaProps {
	if s.Ref != nil {
		r, ok := refs[*s.Ref]
		if !ok {
			panic(fmt.Sprintf("schema $ref %q: no such schema", *s.Ref))
		}
		return r
	}
	if len(s.Properties) > 0 {
		props := make(map[string]apiextv1.JSONSchemaProps, len(s.Properties))
		for k, v := range s.Properties {
			props[k] = resolveRefs(v, refs)
		}
		s.Properties = props
	}
	if s.Items != nil && s.Items.Schema != nil {
		item := resolveRefs(*s.Items.Schema, refs)
		s.Items = &apiextv1.JSONSchemaPropsOrArray{Schema: &item}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		add := resolveRefs(*s.AdditionalProperties.Schema, refs)
		s.AdditionalProperties = &apiextv1.JSONSchemaPropsOrBool{Allows: true, Schema: &add}
	}
	return s
}

// podTemplateSchema returns the structural schema of core/v1 PodTemplateSpec, made from the
// OpenAPI definitions that kube-apiserver serves, without descriptions or defaults.
func podTemplateSchema() apiextv1.JSONSchemaProps {
	defs := generatedopenapi.GetOpenAPIDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef(name)
	})
	c := &converter{defs: defs, stack: map[string]bool{}}
	return c.named(corev1.PodTemplateSpec{}.OpenAPIModelName())
}

// A converter turns OpenAPI definitions into a CRD's JSONSchemaProps, inlining references.
type converter struct {
	defs  map[string]common.OpenAPIDefinition
	stack map[string]bool // definitions being converted, to cut recursion
}

// named converts the definition called name.
func (c *converter) named(name string) apiextv1.JSONSchemaProps {
	switch {
	case strings.HasSuffix(name, ".IntOrString"), strings.HasSuffix(name, ".Quantity"):
		return apiextv1.JSONSchemaProps{XIntOrString: true}
	case strings.HasSuffix(name, ".Time"), strings.HasSuffix(name, ".MicroTime"):
		return apiextv1.JSONSchemaProps{Type: "string", Format: "date-time"}
	case strings.HasSuffix(name, ".RawExtension"), strings.HasSuffix(name, ".FieldsV1"):
		return apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}
	}
	def, ok := c.defs[name]
	if !ok {
		panic(fmt.Sprintf("OpenAPI definition %q: not found", name))
	}
	if c.stack[name] {
		return apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}
	}
	c.stack[name] = true
	defer delete(c.stack, name)
	return c.schema(def.Schema)
}

// schema converts one schema.
func (c *converter) schema(s spec.Schema) apiextv1.JSONSchemaProps {
	if ref := s.Ref.String(); ref != "" {
		return c.named(ref)
	}
	if len(s.AllOf) == 1 && len(s.Type) == 0 {
		return c.schema(s.AllOf[0])
	}
	var out apiextv1.JSONSchemaProps
	if len(s.Type) == 1 {
		out.Type = s.Type[0]
	}
	switch s.Format {
	case "int32", "int64", "double", "float", "byte", "date-time":
		out.Format = s.Format
	}
	out.Required = s.Required
	out.Nullable = s.Nullable
	for _, e := range s.Enum {
		raw, err := yaml.Marshal(e)
		if err != nil {
			panic(err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			panic(err)
		}
		out.Enum = append(out.Enum, apiextv1.JSON{Raw: js})
	}
	if len(s.Properties) > 0 {
		out.Properties = map[string]apiextv1.JSONSchemaProps{}
		for k, v := range s.Properties {
			out.Properties[k] = c.schema(v)
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		item := c.schema(*s.Items.Schema)
		out.Items = &apiextv1.JSONSchemaPropsOrArray{Schema: &item}
	}
	if s.AdditionalProperties != nil {
		if s.AdditionalProperties.Schema != nil {
			add := c.schema(*s.AdditionalProperties.Schema)
			out.AdditionalProperties = &apiextv1.JSONSchemaPropsOrBool{Allows: true, Schema: &add}
		} else if s.AdditionalProperties.Allows {
			out.XPreserveUnknownFields = ptr(true)
		}
	}
	if out.Type == "object" && out.Properties == nil && out.AdditionalProperties == nil {
		out.XPreserveUnknownFields = ptr(true)
	}
	if out.Type == "" && out.Properties == nil && out.Items == nil && !out.XIntOrString {
		// An untyped value (such as JSON): keep it as it is.
		out.XPreserveUnknownFields = ptr(true)
	}
	return out
}

func ptr[T any](v T) *T { return &v }
