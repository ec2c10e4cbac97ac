"""Readers for fine-tuning data files: tables, CoNLL columns, SQuAD JSON.

Each reader returns plain Python lists and names the file and line of
what it cannot use; a table's malformed rows are refused with their line
numbers, or left out (and their lines logged) when the caller says so.

* Tables: TSV (`.tsv`, `.txt`), CSV (`.csv`) with a header row, or JSON
  lines (`.jsonl`, `.json` with one object per line). Columns are chosen
  by name (or by 0-based index for headerless tables). TSV is read with
  quoting off, as GLUE's files need; a UTF-8 BOM is ignored.
* CoNLL: one token per line, whitespace-separated columns, a blank line
  between sentences, `-DOCSTART-` lines skipped.
* SQuAD v1.1 JSON: `{"data": [{"paragraphs": [{"context", "qas": [...]}]}]}`.
"""

import csv
import json
import logging
import os

logger = logging.getLogger(__name__)


class DataFileError(ValueError):
    """A data file that cannot be used: names the file and the problem."""


def _check_file(path):
    if not os.path.isfile(path):
        raise DataFileError(f"{path}: no such file.")
    if os.path.getsize(path) == 0:
        raise DataFileError(f"{path}: the file is empty.")


def table_rows(path, delimiter, has_header):
    """Yields `(line_number, row)` of a TSV, CSV or JSONL file.

    `row` is a dict when the file has a header (`None` for a row whose
    cell count differs from the header's), a list otherwise; blank lines
    are skipped. Callers use the line numbers in their error messages.
    """
    extension = os.path.splitext(path)[1].lower()
    with open(path, encoding="utf-8-sig", newline="") as handle:
        if extension in (".jsonl", ".json"):
            for number, line in enumerate(handle, 1):
                if line.strip():
                    try:
                        yield number, json.loads(line)
                    except json.JSONDecodeError as error:
                        raise DataFileError(
                            f"{path}:{number}: not a JSON object per line "
                            f"({error.msg})."
                        ) from None
            return
        if delimiter is None:
            delimiter = "," if extension == ".csv" else "\t"
        quoting = csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE
        reader = csv.reader(handle, delimiter=delimiter, quoting=quoting)
        header = next(reader, None) if has_header else None
        if has_header and not header:
            raise DataFileError(f"{path}: the header row is missing.")
        for number, row in enumerate(reader, 2 if has_header else 1):
            if not any(cell.strip() for cell in row):
                continue
            if header is None:
                yield number, row
            elif len(row) != len(header):
                yield number, None  # a malformed row, counted by the caller
            else:
                yield number, dict(zip(header, row))


def read_table(path, text_columns, label_column=None, delimiter=None,
               has_header=True, skip_bad_rows=False):
    """Reads text columns (and a label column) from a TSV/CSV/JSONL file.

    A row whose cells do not match the header, or that lacks a column or
    has it empty, is an error that gives the lines of every such row;
    with `skip_bad_rows` they are left out and their lines logged. A
    column missing from the header or from every row is an error.

    Args:
        path: str. The file.
        text_columns: list of 1 or 2 column names (or 0-based indices when
            `has_header=False`).
        label_column: column name/index of the label, or None.
        delimiter: str or None. None picks by extension ("," for .csv,
            tab otherwise).
        has_header: bool. First row holds column names.
        skip_bad_rows: bool. Leave malformed rows out instead of refusing
            the file.

    Returns:
        dict with "texts" (a list per text column), "labels" (list of
        strings, or None) and "skipped" (rows left out).
    """
    _check_file(path)
    columns = list(text_columns) + ([label_column] if label_column is not None
                                    else [])
    texts = [[] for _ in text_columns]
    labels = [] if label_column is not None else None
    bad, seen_columns, rows = [], set(), 0
    for number, row in table_rows(path, delimiter, has_header):
        rows += 1
        if row is None:
            bad.append((number, "its cells do not match the header's"))
            continue
        if isinstance(row, dict):
            seen_columns.update(row)
        values = []
        for column in columns:
            try:
                value = row[column]
            except (KeyError, IndexError, TypeError):
                value = None
            values.append(None if value is None else str(value))
        empty = [column for column, value in zip(columns, values)
                 if value is None or not value.strip()]
        if empty:
            bad.append((number, f"column {empty[0]!r} is empty or missing"))
            continue
        for column_texts, value in zip(texts, values):
            column_texts.append(value)
        if labels is not None:
            labels.append(values[-1].strip())
    if rows == 0:
        raise DataFileError(f"{path}: no data rows.")
    if has_header and seen_columns:
        missing = [c for c in columns if c not in seen_columns]
        if missing:
            raise DataFileError(
                f"{path}: no column {missing}; the columns are "
                f"{sorted(seen_columns)}. Choose them with the column options."
            )
    if not texts[0]:
        raise DataFileError(
            f"{path}: none of the {rows} rows has all of the columns "
            f"{columns}."
        )
    if bad:
        lines = ", ".join(str(number) for number, _ in bad[:10]) + (
            f" and {len(bad) - 10} more" if len(bad) > 10 else "")
        if not skip_bad_rows:
            raise DataFileError(
                f"{path}: {len(bad)} of {rows} rows are malformed (lines "
                f"{lines}; line {bad[0][0]}: {bad[0][1]}). Fix them, or "
                "leave them out with --skip-bad-rows (skip_bad_rows=True).")
        logger.warning("%s: skipped %d of %d malformed rows (lines %s).",
                       path, len(bad), rows, lines)
    return {"texts": texts, "labels": labels, "skipped": len(bad)}


def read_conll(path, token_column=0, tag_column=-1):
    """Reads a CoNLL column file into sentences of words and tags.

    Args:
        path: str. The file.
        token_column: int. Column of the word.
        tag_column: int. Column of the tag (-1: the last).

    Returns:
        dict with "words" and "tags" (lists of lists, one per sentence).
    """
    _check_file(path)
    words, tags, sentence_words, sentence_tags = [], [], [], []
    with open(path, encoding="utf-8-sig") as handle:
        for number, line in enumerate(handle, 1):
            fields = line.split()
            if not fields or fields[0] == "-DOCSTART-":
                if sentence_words:
                    words.append(sentence_words)
                    tags.append(sentence_tags)
                sentence_words, sentence_tags = [], []
                continue
            try:
                sentence_words.append(fields[token_column])
                sentence_tags.append(fields[tag_column])
            except IndexError:
                raise DataFileError(
                    f"{path}:{number}: {len(fields)} columns, but the token "
                    f"column is {token_column} and the tag column "
                    f"{tag_column}."
                ) from None
    if sentence_words:
        words.append(sentence_words)
        tags.append(sentence_tags)
    if not words:
        raise DataFileError(f"{path}: no sentences.")
    return {"words": words, "tags": tags}


def read_squad(path):
    """Reads SQuAD v1.1 JSON into a flat list of questions.

    Returns:
        list of dicts `{"id", "question", "context", "answers"}` where
        "answers" is a list of `{"text", "answer_start"}`.
    """
    _check_file(path)
    with open(path, encoding="utf-8") as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as error:
            raise DataFileError(f"{path}: not valid JSON ({error}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DataFileError(
            f"{path}: expected SQuAD JSON with a top-level 'data' list."
        )
    examples = []
    for article in data["data"]:
        for paragraph in article.get("paragraphs", []):
            context = paragraph.get("context")
            for qa in paragraph.get("qas", []):
                if context is None or "question" not in qa:
                    raise DataFileError(
                        f"{path}: question {qa.get('id')!r} lacks a "
                        "'context' or 'question'."
                    )
                examples.append({
                    "id": str(qa.get("id", len(examples))),
                    "question": qa["question"],
                    "context": context,
                    "answers": list(qa.get("answers", [])),
                })
    if not examples:
        raise DataFileError(f"{path}: no questions.")
    return examples
