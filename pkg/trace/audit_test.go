package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// auditLine is one audit.k8s.io/v1 event as a JSON line.
func auditLine(at, level, verb, group, resource, sub, ns, name string, code int, request, response string) string {
	ref := `{"resource":"` + resource + `","namespace":"` + ns + `","name":"` + name + `","apiGroup":"` + group + `","apiVersion":"v1","subresource":"` + sub + `"}`
	line := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"` + level + `","auditID":"` + at + name + verb + `","stage":"ResponseComplete","requestURI":"/x","verb":"` + verb +
		`","user":{"username":"system:serviceaccount:kube-system:replicaset-controller"},"objectRef":` + ref + `,"responseStatus":{"metadata":{},"code":` + itoa(code) + `}`
	if request != "" {
		line += `,"requestObject":` + request
	}
	if response != "" {
		line += `,"responseObject":` + response
	}
	return line + `,"requestReceivedTimestamp":"` + at + `","stageTimestamp":"` + at + `"}` + "\n"
}

func itoa(n int) string { return strconv.Itoa(n) }

const auditPod = `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-1","namespace":"shop","uid":"u1","labels":{"app":"web"},"annotations":{"vault":"ann-s3cr3t"}},` +
	`"spec":{"containers":[{"name":"web","image":"img-s3cr3t","env":[{"name":"P","value":"env-s3cr3t"}],"resources":{"requests":{"cpu":"500m"}}}]},"status":{"phase":"Pending"}}`

// TestFromAuditLog: audit events of two files, merged by time, become the
// trace of a pod's creation, binding, eviction and deletion and a
// NodeClaim's creation — without the pod's secrets; a read, a refused
// create and another kind's change are left out, and changes audited
// without their object are counted in the notes. A line that is not an
// audit event is refused with its file and line.
func TestFromAuditLog(t *testing.T) {
	dir := t.TempDir()
	// The delete's answer: the pod as stored, on its node, being deleted.
	deleted := strings.Replace(strings.Replace(auditPod, `"uid":"u1"`, `"uid":"u1","deletionTimestamp":"2026-11-30T08:00:09Z"`, 1), `"spec":{`, `"spec":{"nodeName":"node-a",`, 1)
	apiserver := auditLine("2026-11-30T08:00:01.000000Z", "RequestResponse", "create", "", "pods", "", "shop", "web-1", 201, auditPod, auditPod) +
		auditLine("2026-11-30T08:00:02.000000Z", "RequestResponse", "get", "", "pods", "", "shop", "web-1", 200, "", auditPod) +
		auditLine("2026-11-30T08:00:03.000000Z", "RequestResponse", "create", "", "pods", "binding", "shop", "web-1", 201,
			`{"kind":"Binding","apiVersion":"v1","metadata":{"name":"web-1"},"target":{"kind":"Node","name":"node-a"}}`, `{"kind":"Status","apiVersion":"v1","status":"Success"}`) +
		auditLine("2026-11-30T08:00:05.000000Z", "RequestResponse", "create", "", "pods", "", "shop", "web-1", 409, auditPod, `{"kind":"Status","apiVersion":"v1"}`) +
		auditLine("2026-11-30T08:00:06.000000Z", "RequestResponse", "create", "", "configmaps", "", "shop", "conf", 201, `{"kind":"ConfigMap","data":{"k":"cm-s3cr3t"}}`, "") +
		auditLine("2026-11-30T08:00:07.000000Z", "RequestResponse", "create", "policy", "pods", "eviction", "shop", "web-1", 201, "", "") +
		auditLine("2026-11-30T08:00:08.000000Z", "RequestResponse", "create", "", "pods", "eviction", "shop", "web-1", 201, "", "") +
		auditLine("2026-11-30T08:00:09.000000Z", "RequestResponse", "delete", "", "pods", "", "shop", "web-1", 200, "", deleted)
	karpenter := auditLine("2026-11-30T08:00:04.000000Z", "RequestResponse", "create", "karpenter.sh", "nodeclaims", "", "", "general-abc", 201, "",
		`{"kind":"NodeClaim","apiVersion":"karpenter.sh/v1","metadata":{"name":"general-abc","labels":{"karpenter.sh/nodepool":"general"}},"spec":{"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"requirements":[]}}`) +
		auditLine("2026-11-30T08:00:04.000000Z", "Metadata", "create", "", "nodes", "", "", "node-a", 201, "", "") +
		// Joiner's interruption Event (events.k8s.io/v1) is kept, without
		// its note; another Event is not.
		auditLine("2026-11-30T08:00:05.000000Z", "RequestResponse", "create", "events.k8s.io", "events", "", "default", "general-abc.1", 201, "",
			`{"kind":"Event","apiVersion":"events.k8s.io/v1","metadata":{"name":"general-abc.1","namespace":"default"},"eventTime":"2026-11-30T08:00:05.000000Z","reason":"SpotInterruption","type":"Warning","note":"instance i-1 evt-s3cr3t","regarding":{"kind":"NodeClaim","name":"general-abc"},"action":"x","reportingController":"karpenter","reportingInstance":"x"}`) +
		auditLine("2026-11-30T08:00:05.000000Z", "RequestResponse", "create", "", "events", "", "default", "general-abc.2", 201, "",
			`{"kind":"Event","apiVersion":"v1","metadata":{"name":"general-abc.2","namespace":"default"},"reason":"DisruptionBlocked","message":"evt-s3cr3t","involvedObject":{"kind":"NodeClaim","name":"general-abc"}}`)
	for name, body := range map[string]string{"apiserver.log": apiserver, "karpenter.log": karpenter} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := FromAuditLog(&buf, []string{filepath.Join(dir, "apiserver.log"), filepath.Join(dir, "karpenter.log")}); err != nil {
		t.Fatal(err)
	}
	plain := gunzip(t, buf.Bytes())
	for _, s := range []string{"ann-s3cr3t", "img-s3cr3t", "env-s3cr3t", "cm-s3cr3t", "evt-s3cr3t"} {
		if bytes.Contains(plain, []byte(s)) {
			t.Errorf("the trace holds %q", s)
		}
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), "t")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Header.Kinds, ",") != "Event,Node,NodeClaim,Pod" || len(r.Header.Notes) != 1 || !strings.Contains(r.Header.Notes[0], "Node: 1 of its changes were audited at level Metadata") {
		t.Errorf("header %+v", r.Header)
	}
	var got []string
	recs, err := r.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		s := rec.Time.Format("05") + " " + string(rec.Op) + " " + rec.Kind
		if rec.Kind == "Event" && !bytes.Contains(rec.Object, []byte(`"reason":"SpotInterruption"`)) || bytes.Contains(rec.Object, []byte(`"name":"general-abc.2"`)) {
			s += " (not an interruption)"
		}
		switch {
		case bytes.Contains(rec.Object, []byte(`"nodeName":"node-a"`)) && bytes.Contains(rec.Object, []byte(`"DisruptionTarget"`)):
			s += " bound+evicted"
		case bytes.Contains(rec.Object, []byte(`"nodeName":"node-a"`)):
			s += " bound"
		}
		got = append(got, strings.TrimSpace(s))
	}
	want := "01 add Pod|03 update Pod bound|04 add NodeClaim|05 add Event|08 update Pod bound+evicted|09 delete Pod bound|09 end"
	if g := strings.Join(got, "|"); g != want {
		t.Errorf("records\n%s\nwant\n%s", g, want)
	}

	bad := filepath.Join(dir, "bad.log")
	if err := os.WriteFile(bad, []byte(karpenter+"2026-11-30 08:00:10 some text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var none bytes.Buffer
	if err := FromAuditLog(&none, []string{bad}); err == nil || !strings.Contains(err.Error(), "bad.log:5: not an audit event") {
		t.Errorf("a bad line: %v", err)
	}
	if none.Len() != 0 {
		t.Errorf("a log with a bad line wrote %d bytes", none.Len())
	}
}
