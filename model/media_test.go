package model_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
)

func TestParseMedia_ReadsInlineImagesAndDocuments(t *testing.T) {
	kind, v, err := model.OtherKind(json.RawMessage(`{"image":{"format":"jpg","source":{"bytes":"AAEC"}}}`))
	require.NoError(t, err)
	m, err := model.ParseMedia(kind, v)
	require.NoError(t, err)
	assert.Equal(t, model.Media{Kind: "image", Format: "jpg", Bytes: []byte{0, 1, 2}}, m)
	mt, ok := m.ImageMediaType()
	assert.True(t, ok)
	assert.Equal(t, "image/jpeg", mt)

	kind, v, err = model.OtherKind(json.RawMessage(`{"document":{"format":"pdf","name":"spec","source":{"bytes":"JVBERg=="}}}`))
	require.NoError(t, err)
	m, err = model.ParseMedia(kind, v)
	require.NoError(t, err)
	assert.Equal(t, model.Media{Kind: "document", Format: "pdf", Name: "spec", Bytes: []byte("%PDF")}, m)
	_, ok = m.ImageMediaType()
	assert.False(t, ok, "a document has no image type")
}

func TestParseMedia_RefusesWhatItCannotRead(t *testing.T) {
	for name, raw := range map[string]string{
		"two keys":     `{"image":{},"text":"x"}`,
		"not object":   `[1]`,
		"by reference": `{"image":{"format":"png","source":{"s3Location":{"uri":"s3://b/k"}}}}`,
		"no format":    `{"image":{"source":{"bytes":"AA=="}}}`,
		"bad base64":   `{"image":{"format":"png","source":{"bytes":"%%%"}}}`,
		"not media":    `{"video":{"format":"mp4","source":{"bytes":"AA=="}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			kind, v, err := model.OtherKind(json.RawMessage(raw))
			if err == nil {
				_, err = model.ParseMedia(kind, v)
			}
			assert.Error(t, err)
		})
	}
}
