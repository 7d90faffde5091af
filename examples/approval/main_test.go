package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestApprovalExample(t *testing.T) {
	for _, tc := range []struct {
		name, args, stdin string
		want              []string
	}{
		{"flag yes", "-answer y", "", []string{"Do you want to delete [a/b/c.txt d/e/f.txt] (y/N): y", `MESSAGE: {"role":"assistant","content":[{"text":"Deleted [a/b/c.txt d/e/f.txt]."}]}`, "deleted: [a/b/c.txt d/e/f.txt]"}},
		{"flag no", "-answer n", "", []string{"did not delete them: User denied permission to delete files", "deleted: []"}},
		{"terminal yes", "", "Y\n", []string{"Deleted [a/b/c.txt d/e/f.txt].", "deleted: [a/b/c.txt d/e/f.txt]"}},
		{"terminal end of input", "", "", []string{"User denied permission", "deleted: []"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BRAID_ANSWER", "")
			var out bytes.Buffer
			require.NoError(t, run(context.Background(), strings.Fields(tc.args), strings.NewReader(tc.stdin), &out))
			for _, w := range tc.want {
				assert.Contains(t, out.String(), w)
			}
		})
	}
}

func TestApprovalExample_EnvAnswer(t *testing.T) {
	t.Setenv("BRAID_ANSWER", "y")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), nil, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "deleted: [a/b/c.txt d/e/f.txt]")
}
