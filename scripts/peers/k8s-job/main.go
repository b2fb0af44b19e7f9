// k8s-job reads a Kubernetes manifest on stdin and decodes it strictly into Kubernetes' own
// API type for a Job (k8s.io/api/batch/v1): an unknown or misspelt field, or a value of the
// wrong type, is an error. It prints the decoded Job back as JSON, so a test can check what
// Kubernetes would see. Used by crates/volley/tests/k8s.rs on `volley bench --emit k8s-job`.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8s-job:", err)
		os.Exit(1)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(in, &job); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-job: not a valid batch/v1 Job:", err)
		os.Exit(1)
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		fmt.Fprintf(os.Stderr, "k8s-job: apiVersion %q kind %q, want batch/v1 Job\n", job.APIVersion, job.Kind)
		os.Exit(1)
	}
	out, _ := json.Marshal(job)
	fmt.Println(string(out))
}
