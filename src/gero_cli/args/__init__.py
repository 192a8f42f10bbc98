"""Argument groups: the options of ``gero run`` that belong together (the cases, the model's
inputs, the model options, where and how the run executes, tolerances, budgets), each added
to a command's parser and read back as the keywords of ``gero.run`` (Polygraphy's
``tools/args``). A group names an option by its keyword; its flag is the one
``gero_runner.request.RunKeywords`` declares, so the parser, the library and ``--resume``'s
refusal read one table."""
