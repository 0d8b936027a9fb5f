package plan_test

import (
	"errors"
	"fmt"

	"github.com/weftrun/weft/pkg/plan"
)

func ExampleParse() {
	doc := []byte(`
planId: nightly-report
planVersion: "7"
steps:
  - id: extract
    activity: http-get
    input: {url: "https://example.com/export.csv"}
  - id: approve
    kind: waitSignal
    signal: approve
    dependsOn: [extract]
  - id: publish
    activity: echo
    dependsOn: [approve]
    secrets:
      - {name: smtp, provider: env, key: SMTP_PASSWORD}
    input:
      password: {secretRef: smtp}
`)
	p, err := plan.Parse(doc, plan.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	publish, _ := p.Step("publish")
	fmt.Println(p.TopoOrder())
	fmt.Println(publish.Queue, publish.Timeout, publish.Retry.MaxAttempts)
	fmt.Println(publish.Retry.Backoff(2, 0))

	_, err = plan.Parse([]byte(`{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"x","dependsOn":["zz"]}]}`), plan.Limits{})
	var ve *plan.ValidationError
	if errors.As(err, &ve) {
		fmt.Println(ve.Problems[0].Code)
		fmt.Println(err)
	}
	// Output:
	// [extract approve publish]
	// default 5m0s 3
	// 2s
	// UNKNOWN_DEPENDENCY
	// plan: step "a": dependsOn: unknown step "zz"
}
