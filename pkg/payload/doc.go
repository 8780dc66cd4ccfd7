// Package payload loads a CVO-style release payload (a directory of manifests named
// 0000_<NN>_<component>_<rest>.yaml plus a release-metadata file), builds the CVO's task graph from the
// file names, validates the release.openshift.io/delete annotation and formats the CVO's delete-progress
// and Upgradeable messages. It talks to no cluster; package applier does.
package payload
