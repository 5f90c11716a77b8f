"""The markdown report of a project run, and what every table in it shares.

- `report`: the report's sections (what each step produced, how long it took);
- `tables`: the one markdown table renderer and the one CI formatter;
- `system_names`: readable titles of the systems; `plots`: figures written to PNG files.
"""
