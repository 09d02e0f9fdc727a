//go:build integration

package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tuneSpace is small enough to search exhaustively: 4 variants and the
// baseline, each over 2 seeds.
const tuneSpace = `apiVersion: joiner.dev/v1alpha1
kind: TuningSpace
metadata: {name: job-test}
spec:
  nodePools:
    - name: general
      requirements:
        - key: karpenter.sh/capacity-type
          values: [[on-demand], [spot, on-demand]]
      consolidateAfter: [1m, 15m]
  constraints:
    - {metric: podsNeverRan, max: 0}
  search: {seeds: 2}
`

// TestTuneIndexedJob: the Job `joiner tune --emit-job` writes is accepted by
// the real API server (Indexed, one completion per variant); its pod
// command, run here for every index as the kubelet would run it — the
// ConfigMap's items laid out as the volume mounts them,
// $(JOB_COMPLETION_INDEX) expanded from the environment the Job controller
// sets — prints JSON lines that `joiner tune --gather` merges into exactly
// the local search's JSON.
func TestTuneIndexedJob(t *testing.T) {
	bin := buildJoiner(t)
	dir := t.TempDir()
	spacePath := filepath.Join(dir, "space.yaml")
	if err := os.WriteFile(spacePath, []byte(tuneSpace), 0o644); err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join("..", "..", "examples", "scenarios", "default")
	jobFile := filepath.Join(dir, "job.yaml")
	if out, err := exec.Command(bin, "tune", scenario, "--space", spacePath, "--emit-job", jobFile, "--namespace", "default", "--job-name", "tune-test").CombinedOutput(); err != nil {
		t.Fatalf("joiner tune --emit-job: %v\n%s", err, out)
	}
	data, err := os.ReadFile(jobFile)
	if err != nil {
		t.Fatal(err)
	}

	// The API server validates both objects as it would from kubectl apply.
	var cm corev1.ConfigMap
	var job batchv1.Job
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	ctx := context.Background()
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := k8s.Create(ctx, &u); err != nil {
			t.Fatalf("the API server refuses the emitted %s: %v", u.GetKind(), err)
		}
		t.Cleanup(func() { _ = k8s.Delete(ctx, &u, client.PropagationPolicy("Background")) })
		var into any = &cm
		if u.GetKind() == "Job" {
			into = &job
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
			t.Fatal(err)
		}
	}
	if job.Name == "" || cm.Name == "" {
		t.Fatalf("the file holds no Job or ConfigMap:\n%s", data)
	}
	var stored batchv1.Job
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "tune-test"}, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Spec.CompletionMode == nil || *stored.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("completionMode %v, want Indexed", stored.Spec.CompletionMode)
	}
	if n := *stored.Spec.Completions; n != 5 {
		t.Fatalf("completions %d, want 5 (the baseline and 4 variants)", n)
	}
	// A Job that is not Indexed is refused with the same template: the
	// server really checks what the emitted Job relies on.
	bad := stored.DeepCopy()
	bad.ObjectMeta = job.ObjectMeta
	bad.Name = "tune-test-bad"
	bad.ResourceVersion = ""
	bad.Spec.Selector, bad.Spec.ManualSelector = nil, nil
	delete(bad.Spec.Template.Labels, "batch.kubernetes.io/controller-uid")
	delete(bad.Spec.Template.Labels, "controller-uid")
	bad.Spec.CompletionMode = ptrTo(batchv1.NonIndexedCompletion)
	if err := k8s.Create(ctx, bad); !apierrors.IsInvalid(err) {
		t.Fatalf("a NonIndexed Job with backoffLimitPerIndex was not refused: %v", err)
	}

	// The volume as the kubelet mounts it: each item at its path.
	mount := filepath.Join(dir, "mnt")
	vol := job.Spec.Template.Spec.Volumes[0].ConfigMap
	for _, it := range vol.Items {
		p := filepath.Join(mount, it.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(cm.Data[it.Key]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := job.Spec.Template.Spec.Containers[0]
	at := c.VolumeMounts[0].MountPath
	var lines bytes.Buffer
	for i := range int(*job.Spec.Completions) {
		env := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}
		var args []string
		for _, a := range c.Command[1:] {
			a = os.Expand(strings.ReplaceAll(strings.ReplaceAll(a, "$(", "${"), ")", "}"), func(k string) string { return env[k] }) // the kubelet's $(VAR)
			if strings.HasPrefix(a, at+"/") || a == at {
				a = mount + strings.TrimPrefix(a, at)
			}
			args = append(args, a)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX="+strconv.Itoa(i))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("index %d: joiner %s: %v", i, strings.Join(args, " "), err)
		}
		lines.Write(out)
		lines.WriteString("a line of some other log\n")
	}
	logs := filepath.Join(dir, "lines")
	if err := os.WriteFile(logs, lines.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	gathered, err := exec.Command(bin, "tune", "--gather", logs, "--json").Output()
	if err != nil {
		t.Fatalf("joiner tune --gather: %v", err)
	}
	local, err := exec.Command(bin, "tune", scenario, "--space", spacePath, "--json").Output()
	if err != nil {
		t.Fatalf("joiner tune: %v", err)
	}
	if !bytes.Equal(gathered, local) {
		t.Errorf("gathered from the Job's lines:\n%s\nthe local search:\n%s", gathered, local)
	}
	// The table too, not only the JSON.
	gt, _ := exec.Command(bin, "tune", "--gather", logs).Output()
	lt, _ := exec.Command(bin, "tune", scenario, "--space", spacePath).Output()
	if !bytes.Equal(gt, lt) || !bytes.Contains(lt, []byte("(baseline)")) {
		t.Errorf("gathered table:\n%s\nlocal table:\n%s", gt, lt)
	}
}

func ptrTo[T any](v T) *T { return &v }
