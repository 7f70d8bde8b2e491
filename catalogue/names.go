package catalogue

import (
	"fmt"
	"strings"
)

// maxTopicName is Kafka's own bound on a topic name.
const maxTopicName = 249

// TopicByte reports whether c may appear in a topic name.
func TopicByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// TopicNameError says why name is not a legal Kafka topic name, or "" when
// it is: 1 to 249 characters of [a-zA-Z0-9._-], and not "." or "..".
func TopicNameError(name string) string {
	switch {
	case name == "":
		return "Topic name is illegal, it can't be empty"
	case name == "." || name == "..":
		return "Topic name cannot be \".\" or \"..\""
	case len(name) > maxTopicName:
		return fmt.Sprintf("Topic name is illegal, it can't be longer than %d characters, topic name: %s", maxTopicName, name)
	}
	for i := 0; i < len(name); i++ {
		if !TopicByte(name[i]) {
			return fmt.Sprintf("Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return ""
}

// InternalTopic is Kafka's reserved namespace: never listed, never created,
// unknown when named, by prefix and not by a list of known names.
func InternalTopic(name string) bool { return strings.HasPrefix(name, "__") }
