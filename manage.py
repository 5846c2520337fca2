#!/usr/bin/env python
"""Django's command-line utility for the kruntimes portal."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    from django.core.management import execute_from_command_line

    from portal.datadir import ensure_data_dir

    ensure_data_dir()
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
