"""Which words are rare (the rule, the frequency tables it reads) and why a
token was or was not called rare.
"""
