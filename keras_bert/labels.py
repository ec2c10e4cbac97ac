"""Label values shared by preprocessing and the models."""

# Token positions that carry no label (`[CLS]`, `[SEP]`, padding, word
# continuations): the token classifier's loss skips them, and its
# preprocessor writes them (the value Hugging Face uses too).
IGNORE_LABEL = -100
