package model

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Media is an image or a document with inline bytes, read from a block Braid
// keeps as Other in its (Converse's) JSON form:
//
//	{"image": {"format": "png", "source": {"bytes": "<base64>"}}}
//	{"document": {"format": "pdf", "name": "spec", "source": {"bytes": "<base64>"}}}
//
// Providers other than Bedrock use it to send such blocks in their own form.
type Media struct {
	// Kind is "image" or "document".
	Kind string
	// Format is the block's format: png, jpeg, gif, webp for images; pdf,
	// txt, md, csv, html, doc, docx, xls, xlsx for documents.
	Format string
	// Name is a document's name ("" for images).
	Name string
	// Bytes is the content.
	Bytes []byte
}

// imageTypes maps image formats to media types.
var imageTypes = map[string]string{"png": "image/png", "jpeg": "image/jpeg", "jpg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}

// ImageMediaType returns an image's media type ("image/png"), or false for
// a format without one of the four image types every provider takes.
func (m Media) ImageMediaType() (string, bool) {
	if m.Kind != "image" {
		return "", false
	}
	t, ok := imageTypes[m.Format]
	return t, ok
}

// OtherKind splits an Other block into its kind (its one key) and value.
func OtherKind(raw json.RawMessage) (string, json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || len(obj) != 1 {
		return "", nil, fmt.Errorf("not a content block (an object with one key): %.80s", raw)
	}
	for k, v := range obj {
		return k, v, nil
	}
	return "", nil, errors.New("unreachable")
}

// ParseMedia reads the value of an "image" or "document" block. Only inline
// sources ({"bytes": base64}) are read; a source by reference is an error.
func ParseMedia(kind string, value json.RawMessage) (Media, error) {
	if kind != "image" && kind != "document" {
		return Media{}, fmt.Errorf("%q is not an image or document block", kind)
	}
	var b struct {
		Format string `json:"format"`
		Name   string `json:"name"`
		Source struct {
			Bytes []byte `json:"bytes"`
		} `json:"source"`
	}
	if err := json.Unmarshal(value, &b); err != nil {
		return Media{}, fmt.Errorf("%s: %w", kind, err)
	}
	if b.Source.Bytes == nil {
		return Media{}, fmt.Errorf("%s: only inline sources ({\"bytes\": base64}) are supported", kind)
	}
	if b.Format == "" {
		return Media{}, fmt.Errorf("%s: no format", kind)
	}
	return Media{Kind: kind, Format: b.Format, Name: b.Name, Bytes: b.Source.Bytes}, nil
}

// SendableMedia reads a block Braid keeps as Other for a provider whose API
// (named api in errors) takes images and documents in user messages only:
// an image or document it returns, with an image's media type checked;
// reasoningContent and cachePoint, which such APIs do not take back, are
// left out (nil, nil); anything else is an error.
func SendableMedia(role Role, raw json.RawMessage, api string) (*Media, error) {
	kind, v, err := OtherKind(raw)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "reasoningContent", "cachePoint":
		return nil, nil
	case "image", "document":
		if role != RoleUser {
			return nil, fmt.Errorf("%s blocks can only be sent in user messages", kind)
		}
		m, err := ParseMedia(kind, v)
		if err != nil {
			return nil, err
		}
		if _, ok := m.ImageMediaType(); kind == "image" && !ok {
			return nil, fmt.Errorf("image format %q is not supported (png, jpeg, gif, webp)", m.Format)
		}
		return &m, nil
	}
	return nil, fmt.Errorf("%q blocks cannot be sent to the %s", kind, api)
}
