package payload

import (
	"encoding/json"
	"fmt"
)

// ReleaseMetadataFile is the payload file carrying the release version, like the CVO's
// release-manifests/release-metadata. It is JSON: {"kind": "cincinnati-metadata-v0", "version": "1.2.3"}.
const ReleaseMetadataFile = "release-metadata"

// ReleaseMetadataKind is the kind written by payloadtest and accepted by Load (any kind is accepted).
const ReleaseMetadataKind = "cincinnati-metadata-v0"

// ReleaseMetadata is the content of ReleaseMetadataFile.
type ReleaseMetadata struct {
	Kind     string            `json:"kind,omitempty"`
	Version  string            `json:"version"`
	Previous []string          `json:"previous,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

func parseReleaseMetadata(data []byte) (ReleaseMetadata, error) {
	var md ReleaseMetadata
	if err := json.Unmarshal(data, &md); err != nil {
		return md, fmt.Errorf("%s: %w", ReleaseMetadataFile, err)
	}
	if md.Version == "" {
		return md, fmt.Errorf("%s: version is required", ReleaseMetadataFile)
	}
	if _, err := ParseVersion(md.Version); err != nil {
		return md, fmt.Errorf("%s: %w", ReleaseMetadataFile, err)
	}
	return md, nil
}
