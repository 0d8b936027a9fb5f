package intake

// NullLabels is labels as an SQL argument for a jsonb column: SQL NULL
// when there are none (a schedule or trigger whose runs carry no labels),
// else the JSON object.
func NullLabels(labels map[string]string) any {
	if len(labels) == 0 {
		return nil
	}
	return labels
}
