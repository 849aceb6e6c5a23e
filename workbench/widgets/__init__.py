"""Small reusable widgets: field editors, the step list, fact tables."""
