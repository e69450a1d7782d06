"""The built-in capabilities: the InfoBIM building-report examples (seed 000).

``CAPABILITIES`` lists the classes a worker host loads by default.
"""

from ontoflow.actors.capabilities import data as _data
from ontoflow.actors.capabilities._watcher import FILE_CREATED, DirectoryWatcher
from ontoflow.actors.capabilities.infobim import ExportCsv, ListMaterials, ListPipes, ReportError, Summarize

__all__ = ["CAPABILITIES", "DirectoryWatcher", "ExportCsv", "FILE_CREATED", "ListMaterials", "ListPipes", "ReportError", "Summarize"]

#: Every built-in capability class, in the order a building report uses them.
CAPABILITIES = [ListMaterials, ListPipes, ExportCsv, Summarize, ReportError]
CAPABILITIES += [_data.SqliteExtractor, _data.TableTransform, _data.CsvWriter, _data.JsonlWriter]
CAPABILITIES += [DirectoryWatcher]
