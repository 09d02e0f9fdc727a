package trace

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// TestRoundTrip: what a Writer writes a Reader reads back, header first
// and OpEnd last; a trace of another version, a file that is not one, and
// one cut mid-record are refused with the file, the line and why.
func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Started: t0, Kinds: []string{"Pod"}, Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop"}}
	if err := w.Object(t0.Add(time.Second), OpAdd, "Pod", Sanitize(pod)); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Record{Time: t0.Add(2 * time.Second), Op: OpGap, Kind: "Pod", Gap: &Gap{From: "41", Why: "too old resource version"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(t0.Add(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), "a.trace")
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Version != Version || r.Header.Namespace != "shop" || !r.Header.Started.Equal(t0) {
		t.Errorf("header %+v", r.Header)
	}
	var ops []string
	recs, err := r.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		ops = append(ops, string(rec.Op))
		if rec.Op == OpAdd {
			var got corev1.Pod
			if err := json.Unmarshal(rec.Object, &got); err != nil || got.Name != "web-1" || got.Kind != "Pod" {
				t.Errorf("the pod read back: %+v, %v", got, err)
			}
		}
		if rec.Op == OpGap && (rec.Gap == nil || rec.Gap.From != "41") {
			t.Errorf("the gap read back: %+v", rec.Gap)
		}
	}
	if got := strings.Join(ops, ","); got != "add,gap,end" {
		t.Errorf("records %s, want add,gap,end", got)
	}

	// Cut mid-record: the part before the cut is read, then a clear error.
	plain := gunzip(t, buf.Bytes())
	cut := gzipOf(t, plain[:len(plain)-10])
	r, err = NewReader(bytes.NewReader(cut), "cut.trace")
	if err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for lastErr == nil {
		_, lastErr = r.Next()
	}
	if !strings.Contains(lastErr.Error(), "cut.trace:4: the trace ends mid-record") {
		t.Errorf("a cut trace: %v", lastErr)
	}

	// A record edited by hand: its line, its field and the fix.
	for _, tc := range []struct{ line, want string }{
		{`{"t":"yesterday","op":"add"}`, `bad.trace:1: the record's "t" is "yesterday", not an RFC 3339 time such as 2026-12-05T10:00:00Z`},
		{`["add"]`, "bad.trace:1: not a trace record (one JSON object a line: t, op, kind, object"},
	} {
		if _, err := NewReader(bytes.NewReader(gzipOf(t, []byte(tc.line+"\n"))), "bad.trace"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.line, err, tc.want)
		}
	}

	other := gzipOf(t, bytes.Replace(plain, []byte(Version), []byte("joiner.dev/trace/v9"), 1))
	if _, err := NewReader(bytes.NewReader(other), "new.trace"); err == nil || !strings.Contains(err.Error(), `new.trace:1: trace format "joiner.dev/trace/v9"`) {
		t.Errorf("another version: %v", err)
	}
	if _, err := NewReader(strings.NewReader("{}"), "plain.json"); err == nil || !strings.Contains(err.Error(), "plain.json: not a trace") {
		t.Errorf("not a trace: %v", err)
	}
}

// TestSanitizeDropsWhatIsNotScheduling: a node class's user data, a
// StorageClass's parameters, a PersistentVolume's source and annotations
// other than Karpenter's are not kept; a kind traces do not hold is nil.
func TestSanitizeDropsWhatIsNotScheduling(t *testing.T) {
	ud := "#!/bin/bash\nexport TOKEN=ud-s3cr3t"
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: map[string]string{"karpenter.k8s.aws/ec2nodeclass-hash": "1", "owner": "ann-s3cr3t"}}}
	nc.Spec.UserData = &ud
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp3"}, Provisioner: "ebs.csi.aws.com",
		Parameters: map[string]string{"csi.storage.k8s.io/provisioner-secret-name": "param-s3cr3t"}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "x", VolumeHandle: "vol-1",
			VolumeAttributes: map[string]string{"key": "attr-s3cr3t"}}},
		NodeAffinity: &corev1.VolumeNodeAffinity{}, ClaimRef: &corev1.ObjectReference{Namespace: "shop", Name: "data"}}}
	for _, o := range []any{nc, sc, pv} {
		b, err := json.Marshal(Sanitize(o))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("s3cr3t")) {
			t.Errorf("sanitized %T holds a secret: %s", o, b)
		}
	}
	got := Sanitize(nc).(*awsv1.EC2NodeClass)
	if got.Spec.UserData != nil || len(got.Spec.AMISelectorTerms) != 1 || got.Annotations["karpenter.k8s.aws/ec2nodeclass-hash"] != "1" {
		t.Errorf("node class: %+v", got)
	}
	if nc.Spec.UserData == nil {
		t.Error("Sanitize changed its argument")
	}
	if p := Sanitize(pv).(*corev1.PersistentVolume); p.Spec.NodeAffinity == nil || p.Spec.ClaimRef.Name != "data" {
		t.Errorf("volume: %+v", p.Spec)
	}
	if Sanitize(&corev1.Secret{}) != nil || Sanitize(&corev1.ConfigMap{}) != nil {
		t.Error("a Secret or ConfigMap sanitized to something")
	}
	// What a replay ranks pods by is kept: a scale-down's victims and a
	// node's disruption cost depend on it.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Annotations: map[string]string{
		corev1.PodDeletionCost: "-100", v1.AnnotationDoNotDisrupt: "true", "deployment.kubernetes.io/revision": "3", "note": "pod-s3cr3t"}}}
	want := map[string]string{corev1.PodDeletionCost: "-100", v1.AnnotationDoNotDisrupt: "true"}
	if got := Sanitize(pod).(*corev1.Pod).Annotations; !maps.Equal(got, want) {
		t.Errorf("pod annotations %v, want %v", got, want)
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gzipOf(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
