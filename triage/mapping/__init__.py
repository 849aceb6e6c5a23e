"""Shape-bucket mapping: report, actions and its Markdown rendering."""
