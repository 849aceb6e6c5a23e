"""The packet's outputs: classification, mitigation proposal, validation matrix, rollback
triggers, release recommendation, and the review guards enforced before signing and export.

Each output records the SHA-256 of the inputs it was computed from, so an edit to the inputs
makes it visibly stale; `reproduce` re-runs the model and checks the recorded numbers exactly.
"""
