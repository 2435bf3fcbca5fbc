"""OpenPAI v1.2.0's model (docs/openpai-model.md): the job protocol (`protocol`), protocol -> HiveD pod-scheduling-spec
(`hived_spec`), what the rest-server does on a submission (`admission`), naming, Framework/pod objects, job states.

Nothing is imported here, so that `import hivedlab.models.openpai.naming` stays cheap; import the module you need.
"""
