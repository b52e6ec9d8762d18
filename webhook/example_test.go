package webhook_test

import (
	"fmt"

	"github.com/starpod/starpod/webhook"
)

// A config is checked strictly, and each problem is named by its field path.
func ExampleParseConfig() {
	_, err := webhook.ParseConfig("config.yaml", []byte(`
apiVersion: starpod.dev/v1alpha1
kind: WebhookConfig
rules:
- name: gpu-pool
  match: {namespaces: [ml], kinds: [Pod]}
  overlays: [gpu.star]
  onError: Retry
`))
	fmt.Println(err)
	// Output:
	// config.yaml:8:12: rules[0].onError: got "Retry", want one of "Fail", "Ignore"
}
